package commandapi

import (
	"context"
	"net/http"
	"testing"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/projections"
)

// createApp creates an app through the admin route and makes the fake
// directory know it, as the app directory would once it reads the event.
func (h *harness) createApp(name string) domain.App {
	h.t.Helper()
	r := h.do("POST", "/admin/v1/apps", map[string]any{"name": name, "webhook_url": "https://example.com/hook"}, asAdmin)
	expect(h.t, "create app", r, http.StatusCreated, "0")
	d := r.Data(h.t)
	app := domain.App{AppID: r.Num(h.t, "app_id"), Name: name, AppKey: d["app_key"].(string), AppSecret: d["app_secret"].(string),
		Environment: d["environment"].(string), Scopes: domain.Scopes}
	if app.AppKey == "" || app.AppSecret == "" || d["webhook_secret"] == "" {
		h.t.Fatalf("create app answered no credentials: %s", r.Raw)
	}
	h.dir.Put(app)
	return app
}

func TestAdminAppRoutes(t *testing.T) {
	h := newHarness(t)
	app := h.createApp("acme")
	h.apps.mu.Lock()
	waited := len(h.apps.waited)
	h.apps.mu.Unlock()
	if waited != 1 {
		t.Fatalf("create app waited for the directory %d times, want 1", waited)
	}
	path := "/admin/v1/apps/" + itoa(app.AppID)

	rot := h.do("POST", path+"/rotate-secret", nil, asAdmin)
	expect(t, "rotate secret", rot, http.StatusOK, "0")
	if s, _ := rot.Data(t)["app_secret"].(string); s == "" || s == app.AppSecret {
		t.Fatalf("rotated secret: %s", rot.Raw)
	}
	sus := h.do("POST", path+"/suspend", map[string]any{"reason": "abuse"}, asAdmin)
	expect(t, "suspend", sus, http.StatusOK, "0")
	if sus.Data(t)["suspended"] != true {
		t.Fatalf("suspend data: %s", sus.Raw)
	}
	expect(t, "resume", h.do("POST", path+"/resume", nil, asAdmin), http.StatusOK, "0")
	auth := h.do("PUT", path+"/authentication", map[string]any{"require_scheme_h": true}, asAdmin)
	expect(t, "authentication", auth, http.StatusOK, "0")
	if auth.Data(t)["require_scheme_h"] != true {
		t.Fatalf("authentication data: %s", auth.Raw)
	}
	expect(t, "configure webhook", h.do("PATCH", path, map[string]any{"webhook_url": "https://example.com/other", "webhook_events": []string{"user.registered"}}, asAdmin), http.StatusOK, "0")
	sc := h.do("PUT", path+"/scopes", map[string]any{"scopes": []string{"channel_users", "orders"}}, asAdmin)
	expect(t, "scopes", sc, http.StatusOK, "0")

	h.refuses(t, []refusal{
		{"no admin token", "POST", "/admin/v1/apps", map[string]any{"name": "x"}, nil, http.StatusUnauthorized, "HTTP_401"},
		{"wrong admin token", "POST", "/admin/v1/apps", map[string]any{"name": "x"}, func(r *http.Request, _ []byte) { r.Header.Set("Authorization", "Bearer nope") }, http.StatusUnauthorized, "HTTP_401"},
		{"partner signature on an admin route", "POST", "/admin/v1/apps", map[string]any{"name": "x"}, as(h.appA), http.StatusUnauthorized, "HTTP_401"},
		{"no name", "POST", "/admin/v1/apps", map[string]any{"webhook_url": "https://example.com/hook"}, asAdmin, http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
		{"rotate unknown app", "POST", "/admin/v1/apps/777777/rotate-secret", nil, asAdmin, http.StatusNotFound, "APP_NOT_FOUND"},
		{"suspend unknown app", "POST", "/admin/v1/apps/777777/suspend", nil, asAdmin, http.StatusNotFound, "APP_NOT_FOUND"},
		{"authentication without the flag", "PUT", path + "/authentication", map[string]any{}, asAdmin, http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
		{"activate with nothing pending", "POST", path + "/webhook-secret/activate", nil, asAdmin, http.StatusConflict, "NO_PENDING_WEBHOOK_SECRET"},
		{"bad app id", "POST", "/admin/v1/apps/x/suspend", nil, asAdmin, http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
	})

	// The partner rotates and activates its own webhook secret.
	r := h.do("POST", "/open/v1/webhooks/secret/rotate", nil, as(app))
	expect(t, "partner rotate webhook secret", r, http.StatusOK, "0")
	if r.Header.Get("Cache-Control") != "no-store" || r.Data(t)["pending_webhook_secret"] == "" || r.Num(t, "app_id") != app.AppID {
		t.Fatalf("rotate: Cache-Control %q, %s", r.Header.Get("Cache-Control"), r.Raw)
	}
	expect(t, "partner activate webhook secret", h.do("POST", "/open/v1/webhooks/secret/activate", nil, as(app)), http.StatusOK, "0")
	h.refuses(t, []refusal{
		{"activate twice", "POST", "/open/v1/webhooks/secret/activate", nil, as(app), http.StatusConflict, "NO_PENDING_WEBHOOK_SECRET"},
	})
}

func TestAdminWriteWaitsForTheAppDirectory(t *testing.T) {
	h := newHarness(t)
	h.apps.err = context.DeadlineExceeded // the directory never catches up
	r := h.do("POST", "/admin/v1/apps", map[string]any{"name": "late"}, asAdmin)
	expect(t, "create app, directory behind", r, http.StatusServiceUnavailable, "HTTP_503")
	if len(h.apps.waited) != 1 || h.apps.waited[0].IsZero() {
		t.Fatalf("waited for %v, want the app's position", h.apps.waited)
	}
}

func TestRebuild(t *testing.T) {
	h := newHarness(t)
	r := h.do("POST", "/admin/v1/projections/users/rebuild", nil, asAdmin)
	expect(t, "rebuild", r, http.StatusAccepted, "0")
	if r.Data(t)["name"] != "users" {
		t.Fatalf("rebuild data: %s", r.Raw)
	}
	expect(t, "unknown projection", h.do("POST", "/admin/v1/projections/nope/rebuild", nil, asAdmin), http.StatusNotFound, "PROJECTION_NOT_FOUND")
	h.api.Projections = fakeRebuilder{err: subscribe.ErrRebuildPending}
	p := h.do("POST", "/admin/v1/projections/users/rebuild", nil, asAdmin)
	expect(t, "rebuild pending", p, http.StatusServiceUnavailable, "HTTP_503")
	if p.Header.Get("Retry-After") != "5" {
		t.Fatalf("Retry-After %q, want 5", p.Header.Get("Retry-After"))
	}
}

func TestResend(t *testing.T) {
	h := newHarness(t)
	h.resender.owners["d-a"], h.resender.owners["d-b"], h.resender.owners["erased-1"] = h.appA.AppID, h.appB.AppID, h.appA.AppID
	h.resender.written = events.Position{Commit: 42, Prepare: 42}
	r := h.do("POST", "/open/v1/webhooks/deliveries/d-a/resend", nil, as(h.appA))
	expect(t, "partner resend", r, http.StatusAccepted, "0")
	if r.Data(t)["delivery_id"] != "d-a" || r.Data(t)["queued"] != true {
		t.Fatalf("resend data: %s", r.Raw)
	}
	for _, c := range []struct {
		name, path string
		s          sign
		Status     int
		code       string
	}{
		{"another app's delivery", "/open/v1/webhooks/deliveries/d-b/resend", as(h.appA), http.StatusNotFound, "DELIVERY_NOT_FOUND"},
		{"unknown delivery", "/open/v1/webhooks/deliveries/d-x/resend", as(h.appA), http.StatusNotFound, "DELIVERY_NOT_FOUND"},
		{"erased delivery", "/open/v1/webhooks/deliveries/erased-1/resend", as(h.appA), http.StatusGone, "DELIVERY_ERASED"},
		{"operator, erased", "/admin/v1/deliveries/erased-1/resend", asAdmin, http.StatusGone, "DELIVERY_ERASED"},
		{"unsigned", "/open/v1/webhooks/deliveries/d-a/resend", nil, http.StatusUnauthorized, "HTTP_401"},
	} {
		expect(t, c.name, h.do("POST", c.path, nil, c.s), c.Status, c.code)
	}
	if len(h.resender.resent) != 1 {
		t.Fatalf("resent %v, want only d-a", h.resender.resent)
	}
	expect(t, "operator resend", h.do("POST", "/admin/v1/deliveries/d-b/resend", nil, asAdmin), http.StatusAccepted, "0")

	h.api.Deliveries = fakeDeliveries{list: []projections.Delivery{{DeliveryID: "d-a", AppID: h.appA.AppID}, {DeliveryID: "d-b", AppID: h.appB.AppID}}}
	bulk := h.do("POST", "/admin/v1/apps/"+itoa(h.appA.AppID)+"/deliveries/resend", nil, asAdmin)
	expect(t, "bulk resend", bulk, http.StatusAccepted, "0")
	if bulk.Num(t, "queued") != 1 {
		t.Fatalf("bulk data: %s", bulk.Raw)
	}
	expect(t, "bulk resend of an unknown app", h.do("POST", "/admin/v1/apps/777777/deliveries/resend", nil, asAdmin), http.StatusNotFound, "APP_NOT_FOUND")
}
