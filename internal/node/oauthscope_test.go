package node_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/node"
)

// An app without the daily_report scope is refused a token at issue
// (400 invalid_scope, RFC 6749 §5.2), not handed one the daily report then
// refuses with 403; nothing is appended. Granting the scope makes the same
// request succeed.
func TestOAuthTokenNeedsTheDailyReportScope(t *testing.T) {
	t.Parallel()
	p := start(t, node.Config{DataDir: t.TempDir()})
	a := p.createAppWith(map[string]any{"name": "no-daily", "scopes": []string{"channel_users"}})
	before := p.eventCount()
	for _, form := range []url.Values{
		{"grant_type": {"client_credentials"}},
		{"grant_type": {"client_credentials"}, "scope": {"daily_report"}},
	} {
		status, body := p.oauth("/oauth/token", form, a.Key, a.Secret)
		if status != http.StatusBadRequest || body["error"] != "invalid_scope" || body["access_token"] != nil {
			t.Fatalf("token for an app without daily_report (%v): %d %v", form, status, body)
		}
	}
	if n := p.eventCount(); n != before {
		t.Fatalf("a refused token request appended %d events", n-before)
	}
	p.adminOK("PUT", fmt.Sprintf("/admin/v1/apps/%d/scopes", a.ID), map[string]any{"scopes": []string{"channel_users", "daily_report"}}, 200)
	if status, body := p.oauth("/oauth/token", url.Values{"grant_type": {"client_credentials"}}, a.Key, a.Secret); status != http.StatusOK || body["access_token"] == nil {
		t.Fatalf("token once granted: %d %v", status, body)
	}
}

// Rotating an app's secret through node A ends its daily-report tokens on
// node B at once (401 INVALID_TOKEN), rather than two hours later when they
// expire; a token issued with the new secret works on both nodes.
func TestSecretRotationEndsTokensClusterWide(t *testing.T) {
	t.Parallel()
	pa, pb := twoNodes(t, nil)
	a := pa.createApp("partner")
	token := func(secret string) string {
		status, tok := pa.oauth("/oauth/token", url.Values{"grant_type": {"client_credentials"}}, a.Key, secret)
		if status != http.StatusOK {
			t.Fatalf("token: %d %v", status, tok)
		}
		return tok["access_token"].(string)
	}
	daily := func(p *platform, access string) response {
		req, _ := http.NewRequest("GET", p.srv.URL+"/v1/health/daily-report?open_user_id=424242", nil)
		req.Header.Set("Authorization", "Bearer "+access)
		req.Header.Set("X-App-Key", a.Key)
		return p.send(req)
	}
	old := token(a.Secret)
	// USER_NOT_FOUND: the token was accepted, the user does not exist.
	expectCode(t, "before rotation, on B", daily(pb, old), http.StatusNotFound, "USER_NOT_FOUND")
	var rotated struct {
		Secret string `json:"app_secret"`
	}
	res := pa.admin("POST", fmt.Sprintf("/admin/v1/apps/%d/rotate-secret", a.ID), nil)
	if res.Status != http.StatusOK {
		t.Fatalf("rotate: %d %s", res.Status, res.Raw)
	}
	res.data(t, &rotated)
	for name, p := range map[string]*platform{"A": pa, "B": pb} {
		expectCode(t, "old token after rotation, on "+name, daily(p, old), http.StatusUnauthorized, "INVALID_TOKEN")
	}
	if status, body := pa.oauth("/oauth/token", url.Values{"grant_type": {"client_credentials"}}, a.Key, a.Secret); status != http.StatusUnauthorized || body["error"] != "invalid_client" {
		t.Fatalf("token with the old secret: %d %v", status, body)
	}
	fresh := token(rotated.Secret)
	for name, p := range map[string]*platform{"A": pa, "B": pb} {
		expectCode(t, "new token, on "+name, daily(p, fresh), http.StatusNotFound, "USER_NOT_FOUND")
	}
}
