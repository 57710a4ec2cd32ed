package openapi_test

import (
	"fmt"
	"slices"
	"testing"
)

// permissionTraffic drives the default scopes, suspension and the webhook
// secret rotation through the validating transport: every answer of the
// routes involved, including APP_SUSPENDED on each authentication scheme.
func permissionTraffic(t *testing.T, c *client) {
	var creds struct {
		AppID     int64    `json:"app_id"`
		AppKey    string   `json:"app_key"`
		AppSecret string   `json:"app_secret"`
		Scopes    []string `json:"scopes"`
	}
	c.expect(c.admin("POST", "/admin/v1/apps", map[string]any{"name": "least", "scopes": []string{"nothing"}}), 422, "VALIDATION_ERROR")
	c.expect(c.admin("POST", "/admin/v1/apps", map[string]any{"name": "least"}), 201, 0).data(t, &creds)
	if want := []string{"channel_users", "health_reports", "orders", "webhooks"}; !slices.Equal(creds.Scopes, want) {
		t.Fatalf("default scopes %v, want %v", creds.Scopes, want)
	}
	a := &client{t: t, base: c.base, http: c.http, appID: creds.AppID, appKey: creds.AppKey, secret: creds.AppSecret}
	a.expect(a.partner("GET", "/open/v1/webhooks/events", nil), 200, 0)
	a.expect(a.partner("POST", "/open/v1/benefit-cards/verify-use", map[string]any{}), 403, "SCOPE_NOT_GRANTED")
	a.expect(a.signedH("POST", "/sandbox/mock/measure", map[string]any{"appKey": a.appKey}, freshNonce()), 403, "SCOPE_NOT_GRANTED")

	app := fmt.Sprintf("/admin/v1/apps/%d", a.appID)
	// Webhook secret rotation, operator and partner.
	for _, path := range []string{app + "/webhook-secret/rotate", app + "/webhook-secret/activate", app + "/suspend", app + "/resume"} {
		c.expect(c.send("POST", path, nil, nil), 401, "HTTP_401")
		c.expect(c.admin("POST", path, tooLarge()), 413, "PAYLOAD_TOO_LARGE")
	}
	c.expect(c.admin("POST", app+"/suspend", `{`), 400, "HTTP_400")
	for _, path := range []string{"/webhook-secret/rotate", "/webhook-secret/activate", "/suspend", "/resume"} {
		c.expect(c.admin("POST", "/admin/v1/apps/999999"+path, nil), 404, "APP_NOT_FOUND")
		c.expect(c.admin("POST", "/admin/v1/apps/abc"+path, nil), 422, "VALIDATION_ERROR")
	}
	c.expect(c.admin("POST", app+"/webhook-secret/activate", nil), 409, "NO_PENDING_WEBHOOK_SECRET")
	var pending struct {
		Secret string `json:"pending_webhook_secret"`
	}
	c.expect(c.admin("POST", app+"/webhook-secret/rotate", nil), 200, 0).data(t, &pending)
	if pending.Secret == "" {
		t.Fatal("no pending secret")
	}
	c.expect(c.admin("GET", app, nil), 200, 0)
	c.expect(c.admin("POST", app+"/webhook-secret/activate", nil), 200, 0)
	a.expect(a.partner("POST", "/open/v1/webhooks/secret/activate", nil), 409, "NO_PENDING_WEBHOOK_SECRET")
	a.expect(a.partner("POST", "/open/v1/webhooks/secret/rotate", nil), 200, 0)
	a.expect(a.send("POST", "/open/v1/webhooks/secret/rotate", nil, nil), 401, "HTTP_401")
	a.expect(a.partner("POST", "/open/v1/webhooks/secret/activate", nil), 200, 0)

	// Suspension: every scheme refuses with APP_SUSPENDED, the token endpoint with unauthorized_client.
	all := c.newApp("suspended", "sandbox")
	c.expect(c.admin("POST", fmt.Sprintf("/admin/v1/apps/%d/suspend", all.appID), map[string]any{"reason": string(make([]byte, 501))}), 422, "VALIDATION_ERROR")
	c.expect(c.admin("POST", fmt.Sprintf("/admin/v1/apps/%d/suspend", all.appID), map[string]any{"reason": "unpaid invoice"}), 200, 0)
	c.expect(c.admin("POST", fmt.Sprintf("/admin/v1/apps/%d/suspend", all.appID), nil), 200, 0)
	c.expect(c.admin("GET", fmt.Sprintf("/admin/v1/apps/%d", all.appID), nil), 200, 0)
	all.expect(all.partner("GET", "/open/v1/webhooks/events", nil), 403, "APP_SUSPENDED")
	all.expect(all.partner("POST", "/open/v1/webhooks/secret/rotate", nil), 403, "APP_SUSPENDED")
	all.expect(all.partner("POST", "/open/v1/order/shipped-callback-test", map[string]any{}), 403, "APP_SUSPENDED")
	all.expect(all.partner("POST", "/open/v1/benefit-cards/verify-use", map[string]any{}), 403, "APP_SUSPENDED")
	all.expect(all.signedH("GET", "/open/v1/health-reports/1", nil, freshNonce()), 403, "APP_SUSPENDED")
	all.expect(all.signedH("POST", "/sandbox/mock/measure", map[string]any{"appKey": all.appKey}, freshNonce()), 403, "APP_SUSPENDED")
	c.expectOAuth("/oauth/token", "grant_type=client_credentials", all.appKey, all.secret, 400, "unauthorized_client")
	c.expect(c.admin("POST", fmt.Sprintf("/admin/v1/apps/%d/resume", all.appID), nil), 200, 0)
	c.expect(c.admin("POST", fmt.Sprintf("/admin/v1/apps/%d/resume", all.appID), nil), 200, 0)
	all.expect(all.partner("GET", "/open/v1/webhooks/events", nil), 200, 0)
}
