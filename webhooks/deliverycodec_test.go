package webhooks

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// sameAsRegistry checks that whatever readDeliveryEvent decodes is exactly
// what the registry (encoding/json) decodes from the same record.
func sameAsRegistry(t *testing.T, reg *events.Registry, rec events.Recorded) (fast bool) {
	t.Helper()
	p, meta, ok := readDeliveryEvent(rec)
	if !ok {
		return false
	}
	want, err := reg.Decode(rec)
	if err != nil {
		t.Fatalf("%s %q / %q: read directly, but the registry refuses it: %v", rec.Type, rec.Data, rec.Meta, err)
	}
	if !reflect.DeepEqual(p, want.Payload) || !reflect.DeepEqual(meta, want.Metadata) {
		t.Fatalf("%s %q / %q:\nread     %#v %#v\nregistry %#v %#v", rec.Type, rec.Data, rec.Meta, p, meta, want.Payload, want.Metadata)
	}
	return true
}

func deliveryVectors() []events.Payload {
	at := time.Date(2026, 11, 23, 22, 15, 0, 123456789, time.UTC)
	next := at.Add(time.Minute)
	body := `{"event":"user.profile.updated","open_user_id":42,"data":{"nickname":"Zoë \"z\" \\ / \u2028 😀 <b>&amp;","n":null}}`
	return []events.Payload{
		catalog.DeliveryCreated{DeliveryID: "d-1", AppID: 7, Event: "user.profile.updated", SourceEventID: "e-1", SourceStream: "user-42",
			SourcePosition: events.Position{Commit: 12, Prepare: 12}, SourceRecordedAt: at, Body: body, Deliver: true},
		catalog.DeliveryCreated{DeliveryID: "d-2", AppID: 1 << 40, Event: "plugin.x", SourceStream: "plugin-session-9", SourceRecordedAt: at.In(time.FixedZone("x", 3600)),
			Body: "", EndpointID: 3, DeadLetter: true},
		catalog.DeliveryAttempted{DeliveryID: "d-1", Attempt: 2, At: at, URL: "https://x.example/h?a=1&b=2", StatusCode: 503, LatencyMS: 12,
			Error: "503 \"Service Unavailable\"\n", ErrorClass: "http_5xx", Outcome: "retry", NextAttemptAt: &next, ResponseExcerpt: "échec\t\u0001", OpenUserID: 42, SourceStream: "user-42"},
		catalog.DeliveryAttempted{DeliveryID: "d-1", Attempt: 1, At: at, URL: "u", Outcome: "delivered"},
		catalog.DeliveryResendRequested{DeliveryID: "d-1", RequestedBy: "operator:ann", At: at},
	}
}

// TestDeliveryEventsReadAsEncodingJSONReadsThem: every delivery event the
// dispatcher writes (escaped bodies, excerpts, zones, optional fields
// absent or present) is read directly, to the registry's values.
func TestDeliveryEventsReadAsEncodingJSONReadsThem(t *testing.T) {
	reg := catalog.Registry()
	for _, p := range deliveryVectors() {
		for _, meta := range []events.Metadata{
			{AppID: 7, Actor: "dispatcher", OccurredAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)},
			{RequestID: "req \"1\"", OccurredAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		} {
			ev, err := reg.Encode(p, meta)
			if err != nil {
				t.Fatal(err)
			}
			rec := events.Recorded{ID: ev.ID, Type: ev.Type, Data: ev.Data, Meta: ev.Meta}
			if !sameAsRegistry(t, reg, rec) {
				t.Fatalf("%s %s / %s: not read directly", rec.Type, rec.Data, rec.Meta)
			}
		}
	}
}

// TestDeliveryReaderLeavesTheRestToTheRegistry: input outside the subset
// (null, duplicate or unknown keys, other cases of a key, floats, invalid
// UTF-8, lone surrogates, trailing data) is not read directly.
func TestDeliveryReaderLeavesTheRestToTheRegistry(t *testing.T) {
	meta := []byte(`{"schema":1,"occurred_at":"2026-01-02T03:04:05Z"}`)
	created := catalog.DeliveryCreated{}.EventType()
	for _, data := range []string{
		`{"delivery_id":null}`,
		`{"delivery_id":"a","delivery_id":"b"}`,
		`{"Delivery_ID":"a"}`,
		`{"delivery_id":"a","extra":1}`,
		`{"app_id":1.0}`,
		`{"app_id":01}`,
		`{"app_id":-0}`,
		`{"app_id":1e2}`,
		`{"app_id":9223372036854775808}`,
		"{\"body\":\"\xff\"}",
		`{"body":"\ud800"}`,
		`{"body":"\ud800\u0041"}`,
		`{"deliver":tru}`,
		`{"source_position":{"commit":-1}}`,
		`{"delivery_id":"a"} x`,
		`{"delivery_id":"a"`,
		`{"body":"a` + "\n" + `"}`,
	} {
		if _, _, ok := readDeliveryEvent(events.Recorded{Type: created, Data: []byte(data), Meta: meta}); ok {
			t.Errorf("%q was read directly", data)
		}
	}
	if _, _, ok := readDeliveryEvent(events.Recorded{Type: created, Data: []byte(`{}`), Meta: nil}); ok {
		t.Error("an event without metadata was read directly")
	}
	if _, _, ok := readDeliveryEvent(events.Recorded{Type: "user.registered", Data: []byte(`{}`), Meta: meta}); ok {
		t.Error("another event type was read directly")
	}
}

// TestOlderDeliverySchemaGoesThroughItsUpcaster: a delivery event written
// at an older schema than the registry's is decoded by the registry, so an
// upcaster is never skipped.
func TestOlderDeliverySchemaGoesThroughItsUpcaster(t *testing.T) {
	reg := events.NewRegistry()
	reg.MustRegister(2, catalog.DeliveryCreated{}, catalog.DeliveryAttempted{}, catalog.DeliveryResendRequested{})
	reg.RegisterUpcaster(catalog.DeliveryCreated{}.EventType(), 1, func(raw json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(strings.Replace(string(raw), `"event":"old"`, `"event":"upcast"`, 1)), nil
	})
	d := &Dispatcher{Registry: reg}
	rec := events.Recorded{Type: catalog.DeliveryCreated{}.EventType(),
		Data: []byte(`{"delivery_id":"d","event":"old","body":"{}","deliver":true}`),
		Meta: []byte(`{"schema":1,"occurred_at":"2026-01-02T03:04:05Z"}`)}
	env, err := d.decodeDelivery(rec)
	if err != nil {
		t.Fatal(err)
	}
	if got := env.Payload.(*catalog.DeliveryCreated).Event; got != "upcast" {
		t.Fatalf("event %q: the upcaster was skipped", got)
	}
	rec.Meta = []byte(`{"schema":2,"occurred_at":"2026-01-02T03:04:05Z"}`)
	if env, err = d.decodeDelivery(rec); err != nil || env.Payload.(*catalog.DeliveryCreated).Event != "old" || env.Metadata.Schema != 2 {
		t.Fatalf("current schema: %+v, %v", env, err)
	}
}

// FuzzDeliveryDecodeMatchesEncodingJSON: for any bytes, a payload or
// metadata the direct readers accept is accepted by encoding/json with the
// same values.
func FuzzDeliveryDecodeMatchesEncodingJSON(f *testing.F) {
	reg := catalog.Registry()
	for _, p := range deliveryVectors() {
		ev, err := reg.Encode(p, events.Metadata{Actor: "dispatcher", OccurredAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(ev.Type, []byte(ev.Data), []byte(ev.Meta))
	}
	f.Add("webhook.delivery.created", []byte(` { "source_position" : { "commit" : 1 , "prepare" : 2 } , "body" : "\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00" } `), []byte(` {"schema":1, "app_id":-5,"occurred_at":"2026-01-02T03:04:05+01:00"} `))
	f.Fuzz(func(t *testing.T, typ string, data, meta []byte) {
		switch typ {
		case "webhook.delivery.created", "webhook.delivery.attempted", "webhook.delivery.resend_requested":
		default:
			typ = "webhook.delivery.created"
		}
		if m, ok := readMetadata(meta); ok {
			var want events.Metadata
			if err := json.Unmarshal(meta, &want); err != nil || !reflect.DeepEqual(m, want) {
				t.Fatalf("metadata %q: read %#v, encoding/json %#v (%v)", meta, m, want, err)
			}
		}
		var p events.Payload
		var ok bool
		var want any
		switch typ {
		case "webhook.delivery.created":
			p, ok = readCreated(data)
			want = &catalog.DeliveryCreated{}
		case "webhook.delivery.attempted":
			p, ok = readAttempted(data)
			want = &catalog.DeliveryAttempted{}
		default:
			p, ok = readResend(data)
			want = &catalog.DeliveryResendRequested{}
		}
		if !ok {
			return
		}
		if err := json.Unmarshal(data, want); err != nil || !reflect.DeepEqual(p, want) {
			t.Fatalf("%s %q: read %#v, encoding/json %#v (%v)", typ, data, p, want, err)
		}
		sameAsRegistry(t, reg, events.Recorded{Type: typ, Data: data, Meta: []byte(`{"schema":1,"occurred_at":"2026-01-02T03:04:05Z"}`)})
	})
}

// BenchmarkDeliveryDecode compares the direct read of a delivery's
// creation event with the registry's, in one run.
func BenchmarkDeliveryDecode(b *testing.B) {
	reg := catalog.Registry()
	ev, err := reg.Encode(deliveryVectors()[0], events.Metadata{AppID: 7, Actor: "dispatcher", OccurredAt: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	rec := events.Recorded{ID: ev.ID, Type: ev.Type, Data: ev.Data, Meta: ev.Meta}
	d := &Dispatcher{Registry: reg}
	b.Run("registry", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := reg.Decode(rec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := d.decodeDelivery(rec); err != nil {
				b.Fatal(err)
			}
		}
	})
}
