package webhooks

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/eventtypes"
)

// sandboxTypes are the triggerable types plus one that is not, for the
// render equality tests.
var sandboxTypes = append(eventtypes.Triggerable(), "webhook.test", "no.such.type")

// A triggered sample renders as the real event of its type would: the
// same event name, the body's event and delivery id, the app's id where
// the body carries one, the same fan-out (not meant for one endpoint) and
// the id every endpoint's delivery derives from the source event. Types
// that cannot be triggered render nothing.
func TestSandboxEventRendersAsTheRealType(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for _, typ := range eventtypes.Triggerable() {
		env := events.Envelope{Recorded: events.Recorded{ID: "evt-sbx", Type: "app.sandbox_event_triggered"},
			Payload: &catalog.AppSandboxEventTriggered{AppID: 7, Event: typ}, Metadata: events.Metadata{AppID: 7, OccurredAt: at}}
		for _, endpoint := range []int64{0, 3} {
			r, ok := RenderFor(env, time.UTC, endpoint)
			if !ok || r.Event != typ || r.AppID != 7 || r.Only || r.DeadLetter != (typ == "plugin.report.ready") {
				t.Fatalf("%s to %d: ok=%v %+v", typ, endpoint, ok, r)
			}
			var body struct {
				Event      string `json:"event"`
				DeliveryID string `json:"delivery_id"`
				AppID      *int64 `json:"app_id"`
			}
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatalf("%s: %v: %s", typ, err, r.Body)
			}
			want := EndpointDeliveryID(7, endpoint, "evt-sbx")
			if body.Event != typ || body.DeliveryID != want || r.id(endpoint, "evt-sbx") != want || (body.AppID != nil && *body.AppID != 7) {
				t.Fatalf("%s to %d: body %s, want delivery id %s", typ, endpoint, r.Body, want)
			}
		}
		// The equality test's reference renders the same bytes.
		checkRender(t, env, time.FixedZone("CST", 8*3600))
	}
	for _, typ := range []string{"", "webhook.test", "app.created", "health.report.created "} {
		env := events.Envelope{Recorded: events.Recorded{ID: "evt-x"}, Payload: &catalog.AppSandboxEventTriggered{AppID: 7, Event: typ},
			Metadata: events.Metadata{AppID: 7, OccurredAt: at}}
		if r, ok := RenderFor(env, time.UTC, 0); ok {
			t.Fatalf("%q rendered %+v", typ, r)
		}
	}
}

// Every triggerable type is a webhook type the platform knows (its
// personal fields are listed for erasure and redaction).
func TestTriggerableTypesAreWebhookTypes(t *testing.T) {
	for _, typ := range eventtypes.Triggerable() {
		if _, listed := catalog.WebhookPersonalFields(typ); !listed {
			t.Errorf("%s is not a known webhook event", typ)
		}
	}
}
