package webhooks_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/eventtypes"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// Every catalogued type but the per-endpoint webhook.test (sent by
// POST /open/v1/webhooks/endpoints/{id}/test) can be triggered for a
// sandbox app, user.erased included: each trigger is accepted, delivered
// once to the app's endpoint signed with its secret, and its body
// validates against the schema the node serves for the type; the
// user.erased sample names the person by the open_user_id alone.
func TestEveryCataloguedTypeCanBeTriggered(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true})
	schemas := catalogSchemas(t, p)
	a := p.CreateApp("trigger-all")
	rcv := harness.NewReceiver(t)
	rcv.Secret = a.WebhookSecret
	p.ConfigureWebhook(a, rcv.Srv.URL+"/hooks") // every event

	var want []string
	for _, typ := range eventtypes.All() {
		if typ.Name != domain.TestEvent {
			want = append(want, typ.Name)
		}
	}
	if got := eventtypes.Triggerable(); !slices.Equal(got, want) {
		t.Fatalf("triggerable %v, want every catalogued type but %s: %v", got, domain.TestEvent, want)
	}
	for _, typ := range want {
		res := a.Expect("POST", "/open/v1/webhooks/sandbox-events", map[string]any{"event": typ}, http.StatusAccepted, "0")
		if !bytes.Contains(res.Env.Data, []byte(`"event":"`+typ+`"`)) {
			t.Fatalf("%s: data %s", typ, res.Env.Data)
		}
	}
	got := rcv.WaitFor(len(want))
	rcv.Quiet(len(want), 300*time.Millisecond)
	seen := map[string]int{}
	for _, w := range got {
		seen[w.Event]++
		if !w.Verified {
			t.Errorf("%s: signature did not verify", w.Event)
		}
		s := schemas[w.Event]
		if s == nil {
			t.Errorf("a trigger delivered %s, which the catalog does not list", w.Event)
			continue
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(w.Body))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(doc); err != nil {
			t.Errorf("%s body %s does not match the served schema: %v", w.Event, w.Body, err)
		}
		if w.Event == "user.erased" {
			var body map[string]any
			if err := json.Unmarshal(w.Body, &body); err != nil || body["channel_user_id"] != nil || body["open_user_id"] != float64(1<<53-1) {
				t.Errorf("user.erased sample %s", w.Body)
			}
		}
	}
	for _, typ := range want {
		if seen[typ] != 1 {
			t.Errorf("%s delivered %d times, want once", typ, seen[typ])
		}
	}
}
