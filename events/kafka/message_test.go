package kafka_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/segmentio/kafka-go"

	"github.com/healthtech/partner-open-platform/events"
	eventskafka "github.com/healthtech/partner-open-platform/events/kafka"
)

func sampleEvent() events.Recorded {
	return events.Recorded{
		ID:       "9b2f6c1e-4a8d-4f6e-9c61-0d1b2a3c4d5e",
		Stream:   "user-42",
		Type:     "users.registered",
		Revision: 3,
		Position: events.Position{Commit: 1<<63 + 5, Prepare: 1<<63 + 1},
		Created:  time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.UTC),
		Data:     json.RawMessage(`{"z":1,"a":{"big":123456789012345678901234567890,"f":1.50,"e":1E400},"name":"héllo 世界 😀 \u00e9 \u2028","html":"<a&b>","arr":[ 1, 2 ,3 ]}`),
		Meta:     json.RawMessage(`{"schema":2,"app_id":9007199254740993,"actor":"partner"}`),
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	cases := map[string]events.Recorded{
		"awkward json": sampleEvent(),
		"no metadata": {
			ID: "e1", Stream: "s", Type: "t", Position: events.Position{Commit: 1, Prepare: 1},
			Created: time.Date(2024, 2, 29, 23, 59, 59, 1, time.UTC), Data: json.RawMessage(`[]`),
		},
		"app id as string, non-UTC clock": {
			ID: "e2", Stream: "apps/7", Type: "apps.created", Revision: 1 << 40, Position: events.Position{Commit: 2, Prepare: 2},
			Created: time.Date(2024, 6, 1, 12, 0, 0, 0, paris), Data: json.RawMessage(`"just a string"`),
			Meta: json.RawMessage(`{"app_id":"abc","schema":null}`),
		},
	}
	for name, ev := range cases {
		t.Run(name, func(t *testing.T) {
			m := eventskafka.Encode("events", ev)
			if m.Topic != "events" || string(m.Key) != ev.Stream {
				t.Fatalf("topic %q key %q", m.Topic, m.Key)
			}
			if !json.Valid(m.Value) {
				t.Fatalf("value is not JSON: %s", m.Value)
			}
			if !bytes.Contains(m.Value, ev.Data) || (ev.Meta != nil && !bytes.Contains(m.Value, ev.Meta)) {
				t.Fatalf("data or metadata not embedded byte for byte: %s", m.Value)
			}
			got, err := eventskafka.Decode(m)
			if err != nil {
				t.Fatal(err)
			}
			assertSameEvent(t, got, ev)
		})
	}
}

// assertSameEvent compares every field, the payloads byte for byte.
func assertSameEvent(t *testing.T, got, want events.Recorded) {
	t.Helper()
	if got.ID != want.ID || got.Stream != want.Stream || got.Type != want.Type ||
		got.Revision != want.Revision || got.Position != want.Position {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if !got.Created.Equal(want.Created) || got.Created.Location() != time.UTC {
		t.Fatalf("created %v, want %v in UTC", got.Created, want.Created)
	}
	if !bytes.Equal(got.Data, want.Data) || !bytes.Equal(got.Meta, want.Meta) {
		t.Fatalf("payload changed:\n got data %s meta %s\nwant data %s meta %s", got.Data, got.Meta, want.Data, want.Meta)
	}
}

func TestEncodeHeadersAndValueLayout(t *testing.T) {
	ev := sampleEvent()
	m := eventskafka.Encode(eventskafka.DefaultInternalTopic, ev)
	want := [][2]string{
		{"event-id", ev.ID},
		{"event-type", "users.registered"},
		{"stream", "user-42"},
		{"revision", "3"},
		{"position", "9223372036854775813/9223372036854775809"},
		{"app-id", "9007199254740993"},
		{"schema", "2"},
	}
	if len(m.Headers) != len(want) {
		t.Fatalf("headers %v", m.Headers)
	}
	for i, h := range m.Headers {
		if h.Key != want[i][0] || string(h.Value) != want[i][1] {
			t.Fatalf("header %d is %s=%q, want %s=%q", i, h.Key, h.Value, want[i][0], want[i][1])
		}
	}
	wantValue := `{"id":"9b2f6c1e-4a8d-4f6e-9c61-0d1b2a3c4d5e","type":"users.registered","stream":"user-42","revision":3,` +
		`"position":{"commit":9223372036854775813,"prepare":9223372036854775809},"recorded_at":"2025-01-02T03:04:05.123456789Z",` +
		`"metadata":` + string(ev.Meta) + `,"data":` + string(ev.Data) + `}`
	if string(m.Value) != wantValue {
		t.Fatalf("value\n%s\nwant\n%s", m.Value, wantValue)
	}

	bare := eventskafka.Encode("t", events.Recorded{ID: "x", Stream: "s"})
	if !strings.Contains(string(bare.Value), `"metadata":null,"data":null`) {
		t.Fatalf("missing payloads not null: %s", bare.Value)
	}
	for _, h := range bare.Headers {
		if (h.Key == "app-id" || h.Key == "schema") && len(h.Value) != 0 {
			t.Fatalf("%s header %q without metadata", h.Key, h.Value)
		}
	}
}

func TestEncodeKeepsInvalidJSONParseable(t *testing.T) {
	m := eventskafka.Encode("t", events.Recorded{ID: "x", Stream: "s", Data: []byte("not json {"), Meta: []byte{0xff}})
	if !json.Valid(m.Value) {
		t.Fatalf("value is not JSON: %s", m.Value)
	}
	if _, err := eventskafka.Decode(m); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeRejectsNonEvents(t *testing.T) {
	for _, v := range []string{``, `null`, `{}`, `[]`, `{"id":"x"}`, `{"id":"x","stream":"s","revision":-1}`, `{"id":"x","stream":"s","recorded_at":"yesterday"}`} {
		if _, err := eventskafka.Decode(kafka.Message{Value: []byte(v)}); err == nil {
			t.Errorf("Decode(%q) succeeded", v)
		}
	}
}

// FuzzDecode: Decode never panics, and whatever it accepts survives a
// further Encode/Decode unchanged.
func FuzzDecode(f *testing.F) {
	f.Add(eventskafka.Encode("t", sampleEvent()).Value)
	f.Add([]byte(`{"id":"a","stream":"b","recorded_at":"2020-01-01T00:00:00+01:00","data":null}`))
	f.Add([]byte(`{"id":"a","stream":"b","position":{"commit":1e3},"data":{"x":[1,{"y":"\ud800"}]}}`))
	f.Add([]byte(`{"id":1}`))
	f.Fuzz(func(t *testing.T, value []byte) {
		ev, err := eventskafka.Decode(kafka.Message{Value: value})
		if err != nil {
			return
		}
		m := eventskafka.Encode("t", ev)
		if !json.Valid(m.Value) {
			t.Fatalf("re-encoded value is not JSON: %s", m.Value)
		}
		if y := ev.Created.Year(); y < 1 || y > 9999 {
			return // RFC 3339 cannot write it back
		}
		again, err := eventskafka.Decode(m)
		if err != nil {
			t.Fatalf("re-decode %s: %v", m.Value, err)
		}
		assertSameEvent(t, again, ev)
	})
}

// FuzzRoundTrip: any JSON payload comes back byte for byte.
func FuzzRoundTrip(f *testing.F) {
	f.Add(string(sampleEvent().Data), string(sampleEvent().Meta), "user-1", uint64(7))
	f.Add(`1e999`, `{"app_id":"x"}`, "ü", uint64(0))
	f.Fuzz(func(t *testing.T, data, meta, stream string, rev uint64) {
		if stream == "" {
			stream = "s"
		}
		ev := events.Recorded{ID: "id", Stream: stream, Revision: rev, Position: events.Position{Commit: rev, Prepare: rev / 2},
			Created: time.Unix(0, int64(rev>>1)).UTC(), Data: []byte(data), Meta: []byte(meta)}
		for _, raw := range []*json.RawMessage{&ev.Data, &ev.Meta} {
			if trimmed := bytes.TrimSpace(*raw); !json.Valid(*raw) || len(trimmed) != len(*raw) || string(trimmed) == "null" {
				*raw = nil
			}
		}
		if !utf8.ValidString(stream) {
			return // invalid UTF-8 in a name cannot survive JSON
		}
		got, err := eventskafka.Decode(eventskafka.Encode("t", ev))
		if err != nil {
			t.Fatal(err)
		}
		assertSameEvent(t, got, ev)
	})
}
