package webhooks

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// checkAttempted fails unless the direct encoder writes exactly
// json.Marshal's bytes, or declines a value json.Marshal handles
// differently (then the registry's encoding/json path is used).
func checkAttempted(t *testing.T, ev catalog.DeliveryAttempted) (direct bool) {
	t.Helper()
	want, werr := json.Marshal(ev)
	got, ok := appendAttempted(nil, &ev)
	if !ok {
		return false
	}
	if werr != nil {
		t.Fatalf("direct encoder wrote %s where encoding/json fails: %v", got, werr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("direct encoder wrote\n%s\nencoding/json writes\n%s", got, want)
	}
	return true
}

// An outcome is logged with the very bytes encoding/json would write:
// the delivery log, the Postgres read model and every older reader see
// no difference, whatever the receiver answered.
func TestOutcomeEncodesAsEncodingJSONDoes(t *testing.T) {
	at := time.Date(2026, 11, 24, 0, 45, 1, 123456789, time.UTC)
	next := at.Add(time.Minute)
	shanghai := time.FixedZone("CST", 8*3600)
	for _, ev := range []catalog.DeliveryAttempted{
		{DeliveryID: "d-1", Attempt: 1, At: at, URL: "http://127.0.0.1:9/hook", StatusCode: 200, LatencyMS: 3, Outcome: "delivered"},
		{DeliveryID: "d-2", Attempt: 2, At: at.In(shanghai), URL: "https://p.example/h?a=1&b=<2>", LatencyMS: 10000,
			Error: "Post \"https://p.example\": context deadline exceeded\n\t(Client.Timeout)", ErrorClass: "timeout",
			Outcome: "retry", NextAttemptAt: &next},
		{DeliveryID: "d-3", Attempt: 6, At: at, URL: "u", StatusCode: 503, Outcome: "abandoned",
			ResponseExcerpt: "{\"err\":\"büsy \u2028 \u2029 \x00\x1f\x7f é\"}\\ \xff\xfe tail", OpenUserID: 42, SourceStream: "user-42"},
		{DeliveryID: "", At: time.Time{}, Outcome: ""},
	} {
		if !checkAttempted(t, ev) {
			t.Fatalf("the direct encoder declined %+v", ev)
		}
	}
	// What time.Time.MarshalJSON refuses or writes its own way is left to it.
	odd := time.FixedZone("LMT", 8*3600+5*60+43)
	for _, tm := range []time.Time{at.In(odd), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if checkAttempted(t, catalog.DeliveryAttempted{DeliveryID: "d", At: tm}) {
			t.Fatalf("the direct encoder took the time %v", tm)
		}
		n := tm
		if checkAttempted(t, catalog.DeliveryAttempted{DeliveryID: "d", At: at, NextAttemptAt: &n}) {
			t.Fatalf("the direct encoder took the next attempt time %v", tm)
		}
	}
}

// The outcome the dispatcher appends decodes, through the registry, to
// the outcome it decided, with the registry's schema and metadata.
func TestEncodeOutcomeRoundTripsThroughTheRegistry(t *testing.T) {
	reg := events.NewRegistry()
	reg.MustRegister(3, catalog.DeliveryAttempted{})
	d := &Dispatcher{Registry: reg}
	next := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	ev := catalog.DeliveryAttempted{DeliveryID: "d-9", Attempt: 2, At: next.Add(-time.Minute), URL: "http://x/<h>", StatusCode: 500,
		LatencyMS: 7, Error: "HTTP 500", ErrorClass: "http_5xx", Outcome: "retry", NextAttemptAt: &next, ResponseExcerpt: "oops\n"}
	meta := events.Metadata{AppID: 7, Actor: "dispatcher", OccurredAt: next}
	p, err := d.encodeOutcome(ev, meta)
	if err != nil {
		t.Fatal(err)
	}
	viaRegistry, err := reg.Encode(ev, meta)
	if err != nil {
		t.Fatal(err)
	}
	if p.Type != viaRegistry.Type || !bytes.Equal(p.Data, viaRegistry.Data) || !bytes.Equal(p.Meta, viaRegistry.Meta) || p.ID == "" || p.ID == viaRegistry.ID {
		t.Fatalf("direct %+v\nregistry %+v", p, viaRegistry)
	}
	env, err := reg.Decode(events.Recorded{ID: p.ID, Type: p.Type, Data: p.Data, Meta: p.Meta})
	if err != nil {
		t.Fatal(err)
	}
	got := env.Payload.(*catalog.DeliveryAttempted)
	if got.DeliveryID != ev.DeliveryID || got.Outcome != ev.Outcome || !got.NextAttemptAt.Equal(next) || got.ResponseExcerpt != ev.ResponseExcerpt ||
		env.Metadata.Schema != 3 || env.Metadata.AppID != 7 {
		t.Fatalf("decoded %+v %+v", got, env.Metadata)
	}
}

// Whatever the direct encoder writes, encoding/json writes the same.
func FuzzAttemptedEncodeMatchesEncodingJSON(f *testing.F) {
	f.Add("d-1", 1, int64(1764000000), int64(5), 0, "http://h/x", 200, int64(3), "", "", "delivered", false, "", int64(0), "")
	f.Add("d\"2", 3, int64(-62135596800), int64(999999999), 8*3600+7, "<&>", 503, int64(-1), "e\x00\u2028", "c", "retry", true, "\xff{\"a\":1}", int64(9), "user-9")
	f.Fuzz(func(t *testing.T, id string, attempt int, sec, nsec int64, zone int, url string, status int, latency int64, errMsg, class, outcome string, hasNext bool, excerpt string, user int64, stream string) {
		at := time.Unix(sec, nsec).In(time.FixedZone("z", zone%(18*3600)))
		ev := catalog.DeliveryAttempted{DeliveryID: id, Attempt: attempt, At: at, URL: url, StatusCode: status, LatencyMS: latency,
			Error: errMsg, ErrorClass: class, Outcome: outcome, ResponseExcerpt: excerpt, OpenUserID: user, SourceStream: stream}
		if hasNext {
			n := at.Add(time.Duration(latency))
			ev.NextAttemptAt = &n
		}
		checkAttempted(t, ev)
	})
}

// BenchmarkOutcomeEncode compares the registry's reflection encode of an
// outcome with the direct one (run both; report the ratio).
func BenchmarkOutcomeEncode(b *testing.B) {
	reg := events.NewRegistry()
	reg.MustRegister(1, catalog.DeliveryAttempted{})
	d := &Dispatcher{Registry: reg}
	at := time.Now().UTC()
	ev := catalog.DeliveryAttempted{DeliveryID: "0192f0c8-1b2a-7c3d-8e4f-a5b6c7d8e9f0-1", Attempt: 1, At: at, URL: "http://127.0.0.1:41234/hook",
		StatusCode: 200, LatencyMS: 1, Outcome: "delivered", ResponseExcerpt: "ok"}
	meta := events.Metadata{AppID: 7, Actor: "dispatcher", OccurredAt: at}
	b.Run("registry", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := reg.Encode(ev, meta); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := d.encodeOutcome(ev, meta); err != nil {
				b.Fatal(err)
			}
		}
	})
}
