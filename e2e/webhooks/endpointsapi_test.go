package webhooks_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// endpointView is an endpoint as GET /open/v1/webhooks/endpoints shows it.
type endpointView struct {
	EndpointID    int64    `json:"endpoint_id"`
	Default       bool     `json:"default"`
	URL           string   `json:"url"`
	Events        []string `json:"events"`
	Enabled       bool     `json:"enabled"`
	SigningSecret string   `json:"signing_secret"`
	PendingSecret bool     `json:"pending_secret"`
	CreatedAt     string   `json:"created_at"`
	UpdatedAt     string   `json:"updated_at"`
	// Only in the answers of creation and rotation.
	WebhookSecret        string `json:"webhook_secret"`
	PendingWebhookSecret string `json:"pending_webhook_secret"`
}

type endpointList struct {
	Endpoints    []endpointView `json:"endpoints"`
	MaxEndpoints int            `json:"max_endpoints"`
}

// verifies checks a received webhook with secret, as a receiver written
// from the spec does.
func verifies(w harness.Webhook, secret string) bool {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(w.Timestamp + "."))
	mac.Write(w.Body)
	got, err := hex.DecodeString(w.Signature)
	return err == nil && hmac.Equal(got, mac.Sum(nil))
}

func listEndpoints(t *testing.T, a *harness.App) endpointList {
	t.Helper()
	var l endpointList
	res := a.Expect("GET", "/open/v1/webhooks/endpoints", nil, http.StatusOK, "0")
	if strings.Contains(string(res.Raw), "whsec_") {
		t.Fatalf("the list shows a secret: %s", res.Raw)
	}
	res.Data(t, &l)
	return l
}

// A partner manages its webhook endpoints by API: the default endpoint is
// listed beside the added ones; each added endpoint signs with its own
// secret; a rotation keeps the old secret signing until the partner
// activates the new one; a disabled endpoint gets nothing; a deleted one
// is gone; another app's endpoint is a 404 like a missing one; refused
// input appends nothing.
func TestEndpointsByAPI(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		cfg.WebhookAllowLoopback = true
		p := harness.Start(t, cfg)
		a := p.CreateApp("partner")
		def := harness.NewReceiver(t)
		def.Secret = a.WebhookSecret
		p.ConfigureWebhook(a, def.Srv.URL+"/default", "user.profile.updated")

		// The default endpoint is an endpoint like the others: id 0, signed
		// with the app's webhook secret.
		l := listEndpoints(t, a)
		if len(l.Endpoints) != 1 || l.MaxEndpoints != 10 {
			t.Fatalf("endpoints %+v", l)
		}
		if e := l.Endpoints[0]; e.EndpointID != 0 || !e.Default || e.URL != def.Srv.URL+"/default" || !e.Enabled ||
			e.SigningSecret != "app_webhook_secret" || e.PendingSecret || fmt.Sprint(e.Events) != "[user.profile.updated]" {
			t.Fatalf("default endpoint %+v", e)
		}

		// Creation answers the endpoint's own secret, once.
		rcv := harness.NewReceiver(t)
		res := a.Expect("POST", "/open/v1/webhooks/endpoints", map[string]any{"url": rcv.Srv.URL + "/own", "events": []string{"user.profile.updated", "webhook.test"}}, http.StatusCreated, "0")
		if res.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("creation answer may be cached: %v", res.Header)
		}
		var created endpointView
		res.Data(t, &created)
		if created.EndpointID <= 0 || created.Default || !strings.HasPrefix(created.WebhookSecret, "whsec_") ||
			created.WebhookSecret == a.WebhookSecret || created.SigningSecret != "endpoint_secret" || !created.Enabled {
			t.Fatalf("created %+v", created)
		}
		rcv.Secret = created.WebhookSecret
		path := fmt.Sprintf("/open/v1/webhooks/endpoints/%d", created.EndpointID)
		var got endpointView
		res = a.Expect("GET", path, nil, http.StatusOK, "0")
		res.Data(t, &got)
		if strings.Contains(string(res.Raw), "whsec_") || got.URL != rcv.Srv.URL+"/own" || got.EndpointID != created.EndpointID {
			t.Fatalf("read %s", res.Raw)
		}
		if l := listEndpoints(t, a); len(l.Endpoints) != 2 || l.Endpoints[1].EndpointID != created.EndpointID {
			t.Fatalf("after creation %+v", l)
		}

		// A delivery to the new endpoint verifies with its secret, not the app's.
		var reg harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0").Data(t, &reg)
		user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
		a.Expect("PATCH", user, map[string]any{"nickname": "one"}, http.StatusOK, "0")
		w := rcv.WaitFor(1)[0]
		if !w.Verified || verifies(w, a.WebhookSecret) || w.Event != "user.profile.updated" {
			t.Fatalf("own endpoint's delivery %+v", w)
		}
		if d := def.WaitFor(1)[0]; !d.Verified || verifies(d, created.WebhookSecret) {
			t.Fatalf("default endpoint's delivery %+v", d)
		}

		// Rotation: the new secret is shown once; the old one keeps signing
		// until activation.
		res = a.Expect("POST", path+"/secret/rotate", nil, http.StatusOK, "0")
		var rotated endpointView
		res.Data(t, &rotated)
		if !strings.HasPrefix(rotated.PendingWebhookSecret, "whsec_") || rotated.PendingWebhookSecret == created.WebhookSecret || !rotated.PendingSecret {
			t.Fatalf("rotated %s", res.Raw)
		}
		a.Expect("PATCH", user, map[string]any{"nickname": "two"}, http.StatusOK, "0")
		if w := rcv.WaitFor(2)[1]; !verifies(w, created.WebhookSecret) || verifies(w, rotated.PendingWebhookSecret) {
			t.Fatalf("during the overlap the old secret must sign: %+v", w)
		}
		a.Expect("POST", path+"/secret/activate", nil, http.StatusOK, "0")
		rcv.Secret = rotated.PendingWebhookSecret
		a.Expect("PATCH", user, map[string]any{"nickname": "three"}, http.StatusOK, "0")
		if w := rcv.WaitFor(3)[2]; !w.Verified || verifies(w, created.WebhookSecret) {
			t.Fatalf("after activation only the new secret signs: %+v", w)
		}
		a.Expect("POST", path+"/secret/activate", nil, http.StatusConflict, "NO_PENDING_WEBHOOK_SECRET")

		// A test event reaches this endpoint only.
		a.Expect("POST", path+"/test", nil, http.StatusAccepted, "0")
		if w := rcv.WaitFor(4)[3]; !w.Verified || w.Event != "webhook.test" {
			t.Fatalf("test event %+v", w)
		}

		// Disabled: no deliveries, no test event; the default endpoint still gets its own.
		res = a.Expect("PATCH", path, map[string]any{"enabled": false}, http.StatusOK, "0")
		res.Data(t, &got)
		if got.Enabled {
			t.Fatalf("still enabled: %s", res.Raw)
		}
		a.Expect("POST", path+"/test", nil, http.StatusConflict, "WEBHOOK_ENDPOINT_DISABLED")
		a.Expect("PATCH", user, map[string]any{"nickname": "four"}, http.StatusOK, "0")
		def.WaitFor(4)
		rcv.Quiet(4, 300*time.Millisecond)

		// The default endpoint is editable and its secret rotatable by the same routes.
		res = a.Expect("PATCH", "/open/v1/webhooks/endpoints/0", map[string]any{"events": []string{"user.*"}}, http.StatusOK, "0")
		res.Data(t, &got)
		if fmt.Sprint(got.Events) != "[user.*]" || !got.Default {
			t.Fatalf("default endpoint after change %s", res.Raw)
		}
		res = a.Expect("POST", "/open/v1/webhooks/endpoints/0/secret/rotate", nil, http.StatusOK, "0")
		res.Data(t, &rotated)
		if !strings.HasPrefix(rotated.PendingWebhookSecret, "whsec_") || rotated.EndpointID != 0 || !rotated.PendingSecret {
			t.Fatalf("default rotation %s", res.Raw)
		}

		// Another app sees none of it: 404 exactly as for a missing endpoint.
		b := p.CreateApp("other")
		before := p.EventCount()
		missing := b.Expect("GET", "/open/v1/webhooks/endpoints/999999", nil, http.StatusNotFound, "WEBHOOK_ENDPOINT_NOT_FOUND")
		other := b.Expect("GET", path, nil, http.StatusNotFound, "WEBHOOK_ENDPOINT_NOT_FOUND")
		if missing.Env.Message != other.Env.Message {
			t.Fatalf("another app's endpoint differs from a missing one: %s vs %s", other.Raw, missing.Raw)
		}
		b.Expect("PATCH", path, map[string]any{"enabled": true}, http.StatusNotFound, "WEBHOOK_ENDPOINT_NOT_FOUND")
		b.Expect("POST", path+"/secret/rotate", nil, http.StatusNotFound, "WEBHOOK_ENDPOINT_NOT_FOUND")
		b.Expect("POST", path+"/secret/activate", nil, http.StatusNotFound, "WEBHOOK_ENDPOINT_NOT_FOUND")
		b.Expect("POST", path+"/test", nil, http.StatusNotFound, "WEBHOOK_ENDPOINT_NOT_FOUND")
		b.Expect("DELETE", path, nil, http.StatusNotFound, "WEBHOOK_ENDPOINT_NOT_FOUND")
		if l := listEndpoints(t, b); len(l.Endpoints) != 0 {
			t.Fatalf("other app lists %+v", l)
		}

		// Refused input: the spec's codes, nothing appended.
		for _, c := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"url": "http://10.0.0.1/hook"}, "url"},
			{map[string]any{"url": "https://169.254.169.254/latest"}, "url"},
			{map[string]any{"url": "ftp://example.com/hook"}, "url"},
			{map[string]any{}, "url"},
			{map[string]any{"url": rcv.Srv.URL, "events": []string{"not an event"}}, "events[0]"},
			{map[string]any{"url": rcv.Srv.URL, "enabled": "yes"}, "enabled"},
		} {
			res := a.Expect("POST", "/open/v1/webhooks/endpoints", c.body, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
			if len(res.Env.Errors[c.field]) == 0 {
				t.Fatalf("%v: errors %v, want %s", c.body, res.Env.Errors, c.field)
			}
		}
		a.Expect("PATCH", path, map[string]any{"url": ""}, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
		a.Expect("PATCH", path, map[string]any{"url": "http://192.168.1.1/x"}, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
		a.Expect("GET", "/open/v1/webhooks/endpoints/-1", nil, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
		if after := p.EventCount(); after != before {
			t.Fatalf("refused requests appended %d events", after-before)
		}

		// Delete: gone afterwards, and a second delete is a 404.
		a.Expect("DELETE", path, nil, http.StatusOK, "0")
		a.Expect("GET", path, nil, http.StatusNotFound, "WEBHOOK_ENDPOINT_NOT_FOUND")
		a.Expect("DELETE", path, nil, http.StatusNotFound, "WEBHOOK_ENDPOINT_NOT_FOUND")
		if l := listEndpoints(t, a); len(l.Endpoints) != 1 || l.Endpoints[0].EndpointID != 0 {
			t.Fatalf("after delete %+v", l)
		}

		// The limit is the portal's: ten endpoints with the default one.
		for range 9 {
			a.Expect("POST", "/open/v1/webhooks/endpoints", map[string]any{"url": rcv.Srv.URL + "/n", "enabled": false}, http.StatusCreated, "0")
		}
		before = p.EventCount()
		a.Expect("POST", "/open/v1/webhooks/endpoints", map[string]any{"url": rcv.Srv.URL + "/n"}, http.StatusConflict, "TOO_MANY_WEBHOOK_ENDPOINTS")
		if after := p.EventCount(); after != before {
			t.Fatalf("the refused creation appended %d events", after-before)
		}
		l = listEndpoints(t, a)
		if len(l.Endpoints) != 10 || l.Endpoints[9].Enabled {
			t.Fatalf("endpoints created disabled %+v", l.Endpoints[9])
		}
	})
}

// Concurrent creations under one Idempotency-Key create one endpoint and
// answer the same endpoint to every caller that is answered.
func TestEndpointCreationIdempotent(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		cfg.WebhookAllowLoopback = true
		p := harness.Start(t, cfg)
		a := p.CreateApp("partner")
		rcv := harness.NewReceiver(t)
		body := map[string]any{"url": rcv.Srv.URL + "/once"}
		const n = 8
		answers := make([]harness.Response, n)
		var wg sync.WaitGroup
		now := time.Now()
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i] = a.Keyed("POST", "/open/v1/webhooks/endpoints", body, "create-once", now.Add(time.Duration(i)*time.Second))
			}()
		}
		wg.Wait()
		ids := map[int64]bool{}
		for _, res := range answers {
			switch res.Status {
			case http.StatusCreated:
				var e endpointView
				res.Data(t, &e)
				ids[e.EndpointID] = true
			case http.StatusConflict: // the key is in use by a request still running
			default:
				t.Fatalf("answer %d %s", res.Status, res.Raw)
			}
		}
		if len(ids) != 1 {
			t.Fatalf("endpoint ids answered %v", ids)
		}
		if l := listEndpoints(t, a); len(l.Endpoints) != 1 {
			t.Fatalf("endpoints after concurrent creations %+v", l)
		}
	})
}

// An app created without a webhook URL has a default endpoint without
// one: it is not listed (nothing is delivered to it) and reads as a
// missing endpoint, but PATCH of endpoint 0 with a url gives it one, after
// which it is listed and its deliveries verify with the app's webhook
// secret.
func TestDefaultEndpointGetsAURLByAPI(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true})
	a := p.CreateApp("no url")
	if l := listEndpoints(t, a); len(l.Endpoints) != 0 {
		t.Fatalf("endpoints of an app without a webhook URL: %+v", l)
	}
	before := p.EventCount()
	a.Expect("GET", "/open/v1/webhooks/endpoints/0", nil, http.StatusNotFound, "WEBHOOK_ENDPOINT_NOT_FOUND")
	a.Expect("PATCH", "/open/v1/webhooks/endpoints/0", map[string]any{"enabled": false}, http.StatusNotFound, "WEBHOOK_ENDPOINT_NOT_FOUND")
	a.Expect("POST", "/open/v1/webhooks/endpoints/0/secret/rotate", nil, http.StatusNotFound, "WEBHOOK_ENDPOINT_NOT_FOUND")
	if after := p.EventCount(); after != before {
		t.Fatalf("refused requests appended %d events", after-before)
	}
	rcv := harness.NewReceiver(t)
	rcv.Secret = a.WebhookSecret
	var got endpointView
	a.Expect("PATCH", "/open/v1/webhooks/endpoints/0", map[string]any{"url": rcv.Srv.URL + "/hooks", "events": []string{"user.profile.updated"}}, http.StatusOK, "0").Data(t, &got)
	if !got.Default || got.URL != rcv.Srv.URL+"/hooks" || got.SigningSecret != "app_webhook_secret" || !got.Enabled {
		t.Fatalf("default endpoint after PATCH %+v", got)
	}
	if l := listEndpoints(t, a); len(l.Endpoints) != 1 || l.Endpoints[0].EndpointID != 0 {
		t.Fatalf("list %+v", l)
	}
	var reg harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0").Data(t, &reg)
	a.Expect("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID), map[string]any{"nickname": "n"}, http.StatusOK, "0")
	if w := rcv.WaitFor(1)[0]; !w.Verified || w.Event != "user.profile.updated" {
		t.Fatalf("delivery to the default endpoint %+v", w)
	}
}
