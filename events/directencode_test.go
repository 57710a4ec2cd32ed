package events_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

type encoded struct {
	N int `json:"n"`
}

func (encoded) EventType() string { return "test.encoded" }

// A direct encoder can only be attached to a known type, once: a second
// one, or one for a type the log cannot decode, is a start-up error.
func TestRegisterEncoderRefusesUnregisteredAndDuplicateTypes(t *testing.T) {
	reg := events.NewRegistry()
	enc := func(b []byte, p events.Payload) ([]byte, bool) { return append(b, `{"n":7}`...), true }
	if err := reg.RegisterEncoder("test.encoded", enc); err == nil || !strings.Contains(err.Error(), "unregistered") {
		t.Fatalf("encoder for an unregistered type: %v", err)
	}
	reg.MustRegister(1, encoded{})
	if err := reg.RegisterEncoder("test.encoded", enc); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterEncoder("test.encoded", enc); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("second encoder: %v", err)
	}
}

// Encode appends what the direct encoder writes, and what it declines is
// encoded by encoding/json, errors included.
func TestEncodeUsesTheDirectEncoderAndFallsBackWhenItDeclines(t *testing.T) {
	reg := events.NewRegistry()
	reg.MustRegister(1, encoded{})
	if err := reg.RegisterEncoder("test.encoded", func(b []byte, p events.Payload) ([]byte, bool) {
		if p.(encoded).N < 0 {
			return b, false
		}
		return append(b, `{"n":"direct"}`...), true
	}); err != nil {
		t.Fatal(err)
	}
	ev, err := reg.Encode(encoded{N: 1}, events.Metadata{})
	if err != nil || string(ev.Data) != `{"n":"direct"}` {
		t.Fatalf("direct: %s %v", ev.Data, err)
	}
	ev, err = reg.Encode(encoded{N: -3}, events.Metadata{})
	if err != nil || string(ev.Data) != `{"n":-3}` {
		t.Fatalf("declined: %s %v", ev.Data, err)
	}
}

// AppendJSONTime writes what time.Time.MarshalJSON writes, and declines
// exactly the times it refuses.
func TestAppendJSONTimeMatchesMarshalJSON(t *testing.T) {
	base := time.Date(2026, 11, 24, 5, 0, 1, 123456789, time.UTC)
	times := []time.Time{{}, base, base.Truncate(time.Second), base.Local(),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)}
	for _, off := range []int{8 * 3600, -5*3600 - 1800, 8*3600 + 43, 23*3600 + 59*60, 24 * 3600, -24 * 3600, 30 * 3600, -1} {
		times = append(times, base.In(time.FixedZone("z", off)))
	}
	for _, tm := range times {
		want, werr := tm.MarshalJSON()
		got, ok := events.AppendJSONTime([]byte("x"), tm)
		if ok != (werr == nil) {
			t.Fatalf("%v: direct ok=%v, MarshalJSON %v", tm, ok, werr)
		}
		if ok && string(got) != "x"+string(want) {
			t.Fatalf("%v: direct %s, MarshalJSON %s", tm, got, want)
		}
		if ok {
			if j, _ := json.Marshal(tm); string(j) != string(want) {
				t.Fatalf("json.Marshal %s", j)
			}
		}
	}
}
