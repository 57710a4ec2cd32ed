package events

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func sameAsEncodingJSON(t *testing.T, meta Metadata) {
	t.Helper()
	want, wantErr := json.Marshal(meta)
	got, err := encodeMetadata(meta)
	if (err != nil) != (wantErr != nil) || string(got) != string(want) {
		t.Fatalf("%+v: encoded %s (%v), encoding/json %s (%v)", meta, got, err, want, wantErr)
	}
	if err == nil {
		sameDecode(t, got)
	}
}

func sameDecode(t *testing.T, raw []byte) {
	t.Helper()
	var want Metadata
	wantErr := json.Unmarshal(raw, &want)
	got, err := decodeMetadata(raw)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q: error %v, encoding/json's %v", raw, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decoded %#v, encoding/json %#v", raw, got, want)
	}
}

// TestMetadataCodecMatchesEncodingJSON: the metadata every event carries is
// written byte for byte as encoding/json wrote it before, and read back to
// the same values, escapes, zones and extreme years included.
func TestMetadataCodecMatchesEncodingJSON(t *testing.T) {
	at := time.Date(2026, 11, 23, 21, 30, 0, 123456789, time.UTC)
	for _, m := range []Metadata{
		{},
		{Schema: 1, OccurredAt: at},
		{Schema: 2, AppID: 42, Actor: "app:42", RequestID: "req-1", OccurredAt: at},
		{Schema: 1, AppID: -7, OccurredAt: at.Truncate(time.Second)},
		{Schema: 1, Actor: `a"b\c<d>&é` + "\u2028\x01", RequestID: "x", OccurredAt: at},
		{Schema: 1, RequestID: "\xff", OccurredAt: at},
		{Schema: 1, OccurredAt: at.In(time.FixedZone("", 2*3600))},
		{Schema: 1, OccurredAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Schema: 1, OccurredAt: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Schema: -1, OccurredAt: at},
		{Schema: 1, AppID: 42, Actor: "app:42", RequestID: "req-1", Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", OccurredAt: at},
		{Schema: 1, Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", OccurredAt: at},
		{Schema: 1, Traceparent: "<\"", OccurredAt: at},
	} {
		sameAsEncodingJSON(t, m)
	}
	for _, raw := range []string{
		`{"schema":1,"occurred_at":"2026-11-23T21:30:00Z"}`,
		`{"occurred_at":"2026-11-23T21:30:00Z","schema":1}`,
		`{"schema":1,"occurred_at":"2026-11-23T21:30:00.000Z"}`,
		`{"schema":01,"occurred_at":"2026-11-23T21:30:00Z"}`,
		`{"schema":1,"app_id":0,"occurred_at":"2026-11-23T21:30:00Z"}`,
		`{"schema":1,"actor":"","occurred_at":"2026-11-23T21:30:00Z"}`,
		`{"schema":1,"occurred_at":"2026-11-23T21:30:00+01:00"}`,
		`{"schema":1,"occurred_at":"2026-11-23T21:30:00Z"} `,
		`{"Schema":1,"occurred_at":"2026-11-23T21:30:00Z"}`,
		`{"schema":1,"occurred_at":"2026-11-23 21:30:00Z"}`,
		`{"schema":99999999999999999999,"occurred_at":"2026-11-23T21:30:00Z"}`,
		`{"schema":1}`,
		`{}`,
		`{"schema":1,"traceparent":"","occurred_at":"2026-11-23T21:30:00Z"}`,
		`{"schema":1,"occurred_at":"2026-11-23T21:30:00Z","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`,
	} {
		sameDecode(t, []byte(raw))
	}
}

// TestMetadataTraceparent: an event written with a request's trace context
// reads it back, and an event written before events carried one (no
// traceparent key) still decodes, to an empty one.
func TestMetadataTraceparent(t *testing.T) {
	at := time.Date(2026, 11, 23, 21, 30, 0, 0, time.UTC)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	raw, err := encodeMetadata(Metadata{Schema: 1, AppID: 3, RequestID: "r", Traceparent: tp, OccurredAt: at})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"schema":1,"app_id":3,"request_id":"r","traceparent":"` + tp + `","occurred_at":"2026-11-23T21:30:00Z"}`; string(raw) != want {
		t.Fatalf("encoded %s, want %s", raw, want)
	}
	got, err := decodeMetadata(raw)
	if err != nil || got.Traceparent != tp || got.RequestID != "r" || got.AppID != 3 {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	old, err := decodeMetadata([]byte(`{"schema":1,"app_id":3,"actor":"app:3","request_id":"r","occurred_at":"2026-11-23T21:30:00Z"}`))
	if err != nil || old.Traceparent != "" || old.AppID != 3 || !old.OccurredAt.Equal(at) {
		t.Fatalf("old event's metadata decoded to %+v, %v", old, err)
	}
	// A store that reorders keys (Postgres jsonb) keeps the context.
	re, err := decodeMetadata([]byte(`{"actor":"a","schema":1,"traceparent":"` + tp + `","occurred_at":"2026-11-23T21:30:00Z"}`))
	if err != nil || re.Traceparent != tp {
		t.Fatalf("reordered metadata decoded to %+v, %v", re, err)
	}
}

// An event's metadata, read again by every follower, decodes its actor,
// request id and traceparent in one allocation and its time in none.
func TestMetadataDecodesInOneAllocation(t *testing.T) {
	raw := []byte(`{"schema":1,"app_id":3,"actor":"app:3","request_id":"0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0",` +
		`"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","occurred_at":"2026-11-23T21:30:00.123456Z"}`)
	sameDecode(t, raw)
	if n := testing.AllocsPerRun(100, func() { _, _ = decodeMetadata(raw) }); n != 1 {
		t.Errorf("%v allocations per decode, want 1", n)
	}
}

// FuzzMetadataDecode: any bytes decode to what encoding/json reads, and
// any metadata encodes to what encoding/json writes.
func FuzzMetadataDecode(f *testing.F) {
	f.Add([]byte(`{"schema":1,"app_id":3,"actor":"a","request_id":"r","occurred_at":"2026-11-23T21:30:00.5Z"}`), 1, int64(3), "a", "r", int64(1700000000123456789))
	f.Add([]byte(`{"schema":1,"occurred_at":"2026-11-23T21:30:00+01:00"}`), 0, int64(0), "", "<", int64(-62135596800000000))
	f.Add([]byte(`{"schema":1,"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","occurred_at":"2026-11-23T21:30:00Z"}`), 1, int64(0), "", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", int64(0))
	f.Fuzz(func(t *testing.T, raw []byte, schema int, app int64, actor, rid string, nanos int64) {
		sameDecode(t, raw)
		sameAsEncodingJSON(t, Metadata{Schema: schema, AppID: app, Actor: actor, RequestID: rid, OccurredAt: time.Unix(0, nanos).UTC()})
		sameAsEncodingJSON(t, Metadata{Schema: schema, RequestID: actor, Traceparent: rid, OccurredAt: time.Unix(0, nanos).UTC()})
	})
}

// BenchmarkMetadata encodes and decodes one event's metadata by hand
// ("codec") and with encoding/json ("json"); compare the two ratios.
func BenchmarkMetadata(b *testing.B) {
	meta := Metadata{Schema: 1, AppID: 42, Actor: "app:42", RequestID: "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0", OccurredAt: time.Now().UTC()}
	b.Run("codec", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			raw, _ := encodeMetadata(meta)
			if _, err := decodeMetadata(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			raw, _ := json.Marshal(meta)
			var m Metadata
			if err := json.Unmarshal(raw, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
