package events_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/jsoncodec"
)

// directPinged decodes pinged's one shape and counts what it decided.
type directPinged struct {
	mu      sync.Mutex
	seen    []string
	decided int
}

func (d *directPinged) decode(data []byte) (events.Payload, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seen = append(d.seen, string(data))
	p := &pinged{}
	ok := jsoncodec.ReadObjectString(string(data), func(key string, r *jsoncodec.Reader) bool {
		if key != "n" {
			return false
		}
		var n int64
		if !r.Int(&n) {
			return false
		}
		p.N = int(n)
		return int64(p.N) == n
	})
	if ok {
		d.decided++
	}
	return p, ok
}

// A direct decoder reads the data after the upcasters ran, gives the
// payload Decode returns when it decides, and leaves encoding/json to give
// its result (a payload or an error) otherwise.
func TestDecodeUsesDirectDecoderAfterUpcasters(t *testing.T) {
	reg := events.NewRegistry()
	reg.MustRegister(2, pinged{})
	reg.RegisterUpcaster("test.pinged", 1, func(old json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(strings.Replace(string(old), `"count"`, `"n"`, 1)), nil
	})
	d := &directPinged{}
	if err := reg.RegisterDecoder("test.pinged", d.decode); err != nil {
		t.Fatal(err)
	}
	old := events.Recorded{ID: "a", Type: "test.pinged", Data: []byte(`{"count":7}`), Meta: []byte(`{"schema":1,"occurred_at":"2026-01-02T03:04:05Z"}`)}
	env, err := reg.Decode(old)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := env.Payload.(*pinged); !ok || p.N != 7 || env.Metadata.Schema != 1 {
		t.Fatalf("decoded %#v, %+v; want *pinged{N: 7} at schema 1", env.Payload, env.Metadata)
	}
	if len(d.seen) != 1 || d.seen[0] != `{"n":7}` || d.decided != 1 {
		t.Fatalf("direct decoder saw %q and decided %d; want the upcast data, decided once", d.seen, d.decided)
	}

	cur := old
	cur.Meta = []byte(`{"schema":2,"occurred_at":"2026-01-02T03:04:05Z"}`)
	for data, want := range map[string]int{`{"N":3}`: 3, `{"n":4,"extra":[1]}`: 4, `{"n":1,"n":5}`: 5} {
		cur.Data = []byte(data)
		env, err := reg.Decode(cur)
		if err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if p := env.Payload.(*pinged); p.N != want {
			t.Fatalf("%s decoded as %d, want encoding/json's %d", data, p.N, want)
		}
	}
	for _, data := range []string{`{"n":1.5}`, `{"n":"1"}`, `{"n":1`, `[]`} {
		cur.Data = []byte(data)
		if _, err := reg.Decode(cur); err == nil {
			t.Fatalf("%s decoded without error; encoding/json refuses it", data)
		}
	}
	if d.decided != 1 {
		t.Fatalf("direct decoder decided %d inputs, want only the first", d.decided)
	}
}

// A decoder needs its type registered first, and one type has at most one.
func TestRegisterDecoderRefusesUnknownAndDuplicate(t *testing.T) {
	reg := events.NewRegistry()
	d := &directPinged{}
	if err := reg.RegisterDecoder("test.pinged", d.decode); err == nil {
		t.Fatal("decoder for an unregistered type accepted")
	}
	reg.MustRegister(1, pinged{})
	if err := reg.RegisterDecoder("test.pinged", d.decode); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterDecoder("test.pinged", d.decode); err == nil {
		t.Fatal("second decoder for one type accepted")
	}
}

// Followers decode concurrently through one registry.
func TestDecodeDirectConcurrently(t *testing.T) {
	reg := events.NewRegistry()
	reg.MustRegister(1, pinged{})
	d := &directPinged{}
	if err := reg.RegisterDecoder("test.pinged", d.decode); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				rec := events.Recorded{ID: "x", Type: "test.pinged", Data: []byte(`{"n":` + string(rune('0'+i%10)) + `}`), Meta: []byte(`{"schema":1,"occurred_at":"2026-01-02T03:04:05Z"}`)}
				env, err := reg.Decode(rec)
				if err != nil || env.Payload.(*pinged).N != i%10 {
					t.Errorf("writer %d: %v %#v", w, err, env.Payload)
					return
				}
			}
		}()
	}
	wg.Wait()
	if d.decided != 800 {
		t.Fatalf("direct decoder decided %d of 800", d.decided)
	}
}
