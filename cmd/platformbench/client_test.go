package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/auth"
)

type oneApp struct{ app domain.App }

func (d oneApp) ByID(id int64) (domain.App, bool)  { return d.app, id == d.app.AppID }
func (d oneApp) ByKey(k string) (domain.App, bool) { return d.app, k == d.app.AppKey }

type nonceSet map[string]bool

func (n nonceSet) Use(_ context.Context, scope, nonce string, _ time.Time) (bool, error) {
	if n[scope+nonce] {
		return false, nil
	}
	n[scope+nonce] = true
	return true, nil
}

// The tool's requests pass the server's own verifiers; a request signed
// with another secret, or a changed body, does not.
func TestSigningPassesTheServersVerifiers(t *testing.T) {
	server := domain.App{AppID: 7, AppKey: "ak_bench", AppSecret: "s3cret", Scopes: []string{"channel_users", "health_reports"}}
	dir := oneApp{server}
	app := App{ID: 7, Key: "ak_bench", Secret: "s3cret"}
	body := []byte(`{"nickname":"n-1"}`)

	m := auth.SchemeM{Apps: dir, Now: time.Now}
	req := httptest.NewRequest(http.MethodPatch, "/open/v1/channel/users/1", nil)
	signM(req, app, body, time.Now())
	if got, err := m.Verify(req, body); err != nil || got.AppID != 7 {
		t.Fatalf("scheme M: app %d, err %v", got.AppID, err)
	}
	if _, err := m.Verify(req, []byte(`{"nickname":"n-2"}`)); err == nil {
		t.Fatal("scheme M accepted another body")
	}
	wrong := app
	wrong.Secret = "other"
	signM(req, wrong, body, time.Now())
	if _, err := m.Verify(req, body); err == nil {
		t.Fatal("scheme M accepted another secret")
	}

	h := auth.SchemeH{Apps: dir, Nonces: nonceSet{}, Now: time.Now}
	pull := httptest.NewRequest(http.MethodGet, "/open/v1/health-reports/42?x=1", nil)
	signH(pull, app, nil, time.Now())
	if got, err := h.Verify(pull, nil); err != nil || got.AppID != 7 {
		t.Fatalf("scheme H: app %d, err %v", got.AppID, err)
	}
	// The same request again is a replay; a fresh signature (new nonce) is not.
	if _, err := h.Verify(pull, nil); err == nil {
		t.Fatal("scheme H accepted a replayed nonce")
	}
	signH(pull, app, nil, time.Now())
	if _, err := h.Verify(pull, nil); err != nil {
		t.Fatalf("scheme H refused a fresh nonce: %v", err)
	}
}
