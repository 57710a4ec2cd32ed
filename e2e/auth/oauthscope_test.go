package auth_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// An app without the daily_report scope is refused a token at issue
// (400 invalid_scope, RFC 6749 §5.2), not handed one the daily report then
// refuses with 403; nothing is appended. Granting the scope makes the same
// request succeed.
func TestOAuthTokenNeedsTheDailyReportScope(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir()})
	a := p.CreateAppWith(map[string]any{"name": "no-daily", "scopes": []string{"channel_users"}})
	before := p.EventCount()
	for _, form := range []url.Values{
		{"grant_type": {"client_credentials"}},
		{"grant_type": {"client_credentials"}, "scope": {"daily_report"}},
	} {
		status, body := p.OAuth("/oauth/token", form, a.Key, a.Secret)
		if status != http.StatusBadRequest || body["error"] != "invalid_scope" || body["access_token"] != nil {
			t.Fatalf("token for an app without daily_report (%v): %d %v", form, status, body)
		}
	}
	if n := p.EventCount(); n != before {
		t.Fatalf("a refused token request appended %d events", n-before)
	}
	p.AdminOK("PUT", fmt.Sprintf("/admin/v1/apps/%d/scopes", a.ID), map[string]any{"scopes": []string{"channel_users", "daily_report"}}, 200)
	if status, body := p.OAuth("/oauth/token", url.Values{"grant_type": {"client_credentials"}}, a.Key, a.Secret); status != http.StatusOK || body["access_token"] == nil {
		t.Fatalf("token once granted: %d %v", status, body)
	}
}

// Rotating an app's secret through node A ends its daily-report tokens on
// node B at once (401 INVALID_TOKEN), rather than two hours later when they
// expire; a token issued with the new secret works on both nodes.
func TestSecretRotationEndsTokensClusterWide(t *testing.T) {
	t.Parallel()
	pa, pb := harness.TwoNodes(t, nil)
	a := pa.CreateApp("partner")
	token := func(secret string) string {
		status, tok := pa.OAuth("/oauth/token", url.Values{"grant_type": {"client_credentials"}}, a.Key, secret)
		if status != http.StatusOK {
			t.Fatalf("token: %d %v", status, tok)
		}
		return tok["access_token"].(string)
	}
	daily := func(p *harness.Platform, access string) harness.Response {
		req, _ := http.NewRequest("GET", p.Srv.URL+"/v1/health/daily-report?open_user_id=424242", nil)
		req.Header.Set("Authorization", "Bearer "+access)
		req.Header.Set("X-App-Key", a.Key)
		return p.Send(req)
	}
	old := token(a.Secret)
	// USER_NOT_FOUND: the token was accepted, the user does not exist.
	harness.ExpectCode(t, "before rotation, on B", daily(pb, old), http.StatusNotFound, "USER_NOT_FOUND")
	var rotated struct {
		Secret string `json:"app_secret"`
	}
	res := pa.Admin("POST", fmt.Sprintf("/admin/v1/apps/%d/rotate-secret", a.ID), nil)
	if res.Status != http.StatusOK {
		t.Fatalf("rotate: %d %s", res.Status, res.Raw)
	}
	res.Data(t, &rotated)
	for name, p := range map[string]*harness.Platform{"A": pa, "B": pb} {
		harness.ExpectCode(t, "old token after rotation, on "+name, daily(p, old), http.StatusUnauthorized, "INVALID_TOKEN")
	}
	if status, body := pa.OAuth("/oauth/token", url.Values{"grant_type": {"client_credentials"}}, a.Key, a.Secret); status != http.StatusUnauthorized || body["error"] != "invalid_client" {
		t.Fatalf("token with the old secret: %d %v", status, body)
	}
	fresh := token(rotated.Secret)
	for name, p := range map[string]*harness.Platform{"A": pa, "B": pb} {
		harness.ExpectCode(t, "new token, on "+name, daily(p, fresh), http.StatusNotFound, "USER_NOT_FOUND")
	}
}
