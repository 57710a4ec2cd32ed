package catalog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
)

// testdata/events_golden.jsonl holds events as the platform wrote them to
// its logs (bbolt and Postgres store these data and metadata bytes as they
// are) before the codecs moved onto events/jsoncodec: every catalog type,
// a zero value and random ones, with the payload the registry decoded
// then (marshaled) and the bytes it encoded that payload to again. Stored
// events stay readable: each decodes to the same payload (and to
// encoding/json's), and encoding it again writes the same bytes as before,
// so a log written before and after a codec change holds one format.
func TestStoredEventsDecodeAsBefore(t *testing.T) {
	f, err := os.Open("testdata/events_golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	reg := Registry()
	types := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var g struct {
			Type, Data, Meta, Decoded string
			Again                     string `json:"again"`
			AgainMeta                 string `json:"again_meta"`
		}
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatal(err)
		}
		types[g.Type] = true
		env, err := reg.Decode(events.Recorded{ID: "golden", Type: g.Type, Data: []byte(g.Data), Meta: []byte(g.Meta)})
		if err != nil {
			t.Fatalf("%s %s: %v", g.Type, g.Data, err)
		}
		if got, err := json.Marshal(env.Payload); err != nil || string(got) != g.Decoded {
			t.Fatalf("%s %s:\ndecoded %s (%v)\nbefore  %s", g.Type, g.Data, got, err, g.Decoded)
		}
		want := reflect.New(reflect.TypeOf(env.Payload).Elem())
		if err := json.Unmarshal([]byte(g.Data), want.Interface()); err != nil || !reflect.DeepEqual(env.Payload, want.Interface()) {
			t.Fatalf("%s %s: decoded %#v, encoding/json %#v (%v)", g.Type, g.Data, env.Payload, want.Interface(), err)
		}
		again, err := reg.Encode(env.Payload, env.Metadata)
		if err != nil {
			t.Fatalf("%s: encode again: %v", g.Type, err)
		}
		if !bytes.Equal(again.Data, []byte(g.Again)) || !bytes.Equal(again.Meta, []byte(g.AgainMeta)) {
			t.Fatalf("%s: encoded again as\n%s %s\nbefore\n%s %s", g.Type, again.Data, again.Meta, g.Again, g.AgainMeta)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, p := range Payloads() {
		if !types[p.EventType()] {
			t.Errorf("%s has no stored event in the golden file", p.EventType())
		}
	}
}
