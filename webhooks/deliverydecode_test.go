package webhooks

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// The dispatcher reads a delivery's stream back on every attempt through
// the registry, whose catalog direct decoders read the delivery events and
// their metadata (events/jsoncodec, the one JSON reader); these tests pin
// that what the sender sees is what encoding/json decodes (on arbitrary
// bytes: catalog's FuzzDirectDecodeMatchesEncodingJSON and events'
// FuzzMetadataDecode).

// sameAsEncodingJSON checks that the dispatcher's decode of rec (the
// registry's) fails exactly when encoding/json fails on its payload or
// metadata, and otherwise gives encoding/json's values.
func sameAsEncodingJSON(t *testing.T, reg *events.Registry, rec events.Recorded, want events.Payload) {
	t.Helper()
	var wantMeta events.Metadata
	metaErr := json.Unmarshal(rec.Meta, &wantMeta)
	dataErr := json.Unmarshal(rec.Data, want)
	env, err := reg.Decode(rec)
	if (err == nil) != (metaErr == nil && dataErr == nil) {
		t.Fatalf("%s %q / %q: registry error %v, encoding/json errors %v / %v", rec.Type, rec.Data, rec.Meta, err, dataErr, metaErr)
	}
	if err != nil {
		return
	}
	if !reflect.DeepEqual(env.Payload, want) || !reflect.DeepEqual(env.Metadata, wantMeta) {
		t.Fatalf("%s %q / %q:\nregistry      %#v %#v\nencoding/json %#v %#v", rec.Type, rec.Data, rec.Meta, env.Payload, env.Metadata, want, wantMeta)
	}
}

// zeroDelivery is a fresh payload of a delivery event type, as a pointer.
func zeroDelivery(typ string) events.Payload {
	switch typ {
	case catalog.DeliveryAttempted{}.EventType():
		return &catalog.DeliveryAttempted{}
	case catalog.DeliveryResendRequested{}.EventType():
		return &catalog.DeliveryResendRequested{}
	}
	return &catalog.DeliveryCreated{}
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
// absent or present) decodes to encoding/json's values.
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
			sameAsEncodingJSON(t, reg, events.Recorded{ID: ev.ID, Type: ev.Type, Data: ev.Data, Meta: ev.Meta}, zeroDelivery(ev.Type))
		}
	}
}

// BenchmarkDeliveryDecode measures the dispatcher's decode of a delivery's
// creation event; compare with main's "direct" sub-benchmark (the webhooks
// package's own reader, which this replaced).
func BenchmarkDeliveryDecode(b *testing.B) {
	reg := catalog.Registry()
	ev, err := reg.Encode(deliveryVectors()[0], events.Metadata{AppID: 7, Actor: "dispatcher", OccurredAt: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	rec := events.Recorded{ID: ev.ID, Type: ev.Type, Data: ev.Data, Meta: ev.Meta}
	b.Run("registry", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := reg.Decode(rec); err != nil {
				b.Fatal(err)
			}
		}
	})
}
