package webhooks_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// describedEndpoint is the part of an endpoint this file reads.
type describedEndpoint struct {
	EndpointID  int64  `json:"endpoint_id"`
	Description string `json:"description"`
}

// An endpoint carries the partner's description: given at creation,
// replaced or cleared by an update, shown by the list and by one endpoint,
// for the default endpoint too; too long, control characters and a wrong
// type are 422 on description and append nothing; an update that repeats
// the description appends nothing.
func TestEndpointDescription(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		cfg.WebhookAllowLoopback = true
		p := harness.Start(t, cfg)
		a := p.CreateApp("described")
		rcv := harness.NewReceiver(t)
		p.ConfigureWebhook(a, rcv.Srv.URL+"/default", "user.profile.updated")

		var created describedEndpoint
		a.Expect("POST", "/open/v1/webhooks/endpoints", map[string]any{"url": rcv.Srv.URL + "/crm", "description": "CRM sync (staging) – 渡辺"},
			http.StatusCreated, "0").Data(t, &created)
		if created.Description != "CRM sync (staging) – 渡辺" {
			t.Fatalf("created %+v", created)
		}
		path := "/open/v1/webhooks/endpoints/" + strconv.FormatInt(created.EndpointID, 10)
		for _, bad := range []any{strings.Repeat("é", 257), "two\nlines", "tab\there", 42, []string{"x"}} {
			before := p.EventCount()
			res := a.Expect("PATCH", path, map[string]any{"description": bad}, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
			if _, ok := res.Env.Errors["description"]; !ok {
				t.Fatalf("%v: errors %v", bad, res.Env.Errors)
			}
			res = a.Expect("POST", "/open/v1/webhooks/endpoints", map[string]any{"url": rcv.Srv.URL + "/x", "description": bad}, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
			if _, ok := res.Env.Errors["description"]; !ok {
				t.Fatalf("create %v: errors %v", bad, res.Env.Errors)
			}
			if after := p.EventCount(); after != before {
				t.Fatalf("%v: refused input appended %d events", bad, after-before)
			}
		}
		var got describedEndpoint
		a.Expect("PATCH", path, map[string]any{"description": strings.Repeat("é", 256)}, http.StatusOK, "0").Data(t, &got)
		if got.Description != strings.Repeat("é", 256) {
			t.Fatalf("256 characters: %+v", got)
		}
		before := p.EventCount()
		a.Expect("PATCH", path, map[string]any{"description": strings.Repeat("é", 256)}, http.StatusOK, "0")
		if after := p.EventCount(); after != before {
			t.Fatalf("the same description appended %d events", after-before)
		}
		a.Expect("PATCH", path, map[string]any{"description": nil}, http.StatusOK, "0").Data(t, &got)
		if got.Description != "" {
			t.Fatalf("cleared: %+v", got)
		}
		a.Expect("PATCH", "/open/v1/webhooks/endpoints/0", map[string]any{"description": "the app's own receiver"}, http.StatusOK, "0").Data(t, &got)
		var l struct {
			Endpoints []describedEndpoint `json:"endpoints"`
		}
		a.Expect("GET", "/open/v1/webhooks/endpoints", nil, http.StatusOK, "0").Data(t, &l)
		if len(l.Endpoints) != 2 || l.Endpoints[0].Description != "the app's own receiver" || l.Endpoints[1].Description != "" {
			t.Fatalf("list %+v", l)
		}
		// Another app sees a missing endpoint, and changes nothing.
		b := p.CreateApp("other")
		b.Expect("PATCH", path, map[string]any{"description": "mine"}, http.StatusNotFound, "WEBHOOK_ENDPOINT_NOT_FOUND")
	})
}
