package auth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/internal/ratelimit"
	"github.com/healthtech/partner-open-platform/projections/memory"
)

type keyedApps map[int64]domain.App

func (d keyedApps) ByID(id int64) (domain.App, bool) { a, ok := d[id]; return a, ok }
func (d keyedApps) ByKey(k string) (domain.App, bool) {
	for _, a := range d {
		if a.AppKey == k {
			return a, true
		}
	}
	return domain.App{}, false
}

// denyAll is a rate limiter that has no room left.
type denyAll struct{}

func (denyAll) Allow(context.Context, string) (ratelimit.Decision, error) {
	return ratelimit.Decision{Allowed: false, Limit: 1, RetryAfter: time.Second, Reset: time.Second}, nil
}

func signedH(method, target, nonce string, body []byte, ts int64, app domain.App) *http.Request {
	r := httptest.NewRequest(method, target, nil)
	sec := strconv.FormatInt(ts, 10)
	r.Header.Set("X-App-Key", app.AppKey)
	r.Header.Set("X-Timestamp", sec)
	r.Header.Set("X-Nonce", nonce)
	r.Header.Set("X-Signature", auth.SignH(app.AppSecret, method, target, sec, nonce, body))
	return r
}

func problemOf(err error) *httpapi.Problem {
	var p *httpapi.Problem
	if errors.As(err, &p) {
		return p
	}
	return nil
}

func TestPartnerAcceptsSchemeHWithTheRouteCodes(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	store := memory.New()
	dir := keyedApps{9: bound}
	p := auth.Partner{M: auth.SchemeM{Apps: dir, Now: clock, Bindings: store}, H: auth.SchemeH{Apps: dir, Nonces: store, Now: clock}}
	target := "/open/v1/channel/users/1/family-members/2"

	app, err := p.Verify(signedH("DELETE", target, "n1", nil, now.Unix(), bound), nil)
	if err != nil || app.AppID != 9 {
		t.Fatalf("scheme H on a scheme M route: %v %v", app.AppID, err)
	}
	// Its nonce is spent: the replay is the route's HTTP_401.
	if pr := problemOf(mustFail(p.Verify(signedH("DELETE", target, "n1", nil, now.Unix(), bound), nil))); pr == nil || pr.Status != 401 || pr.Code != "HTTP_401" {
		t.Errorf("replayed nonce: %+v, want 401 HTTP_401", pr)
	}
	// X-App-Key decides: a good scheme M signature beside a bad scheme H one is refused.
	r := signedH("PATCH", "/open/v1/channel/users/1", "n2", nil, now.Unix(), bound)
	r.Header.Set("X-Signature", auth.SignM(bound.AppKey, strconv.FormatInt(now.Unix(), 10), bound.AppSecret, nil))
	r.Header.Set("X-App-Id", "9")
	if pr := problemOf(mustFail(p.Verify(r, nil))); pr == nil || pr.Code != "HTTP_401" {
		t.Errorf("scheme M signature under X-App-Key: %+v, want HTTP_401", pr)
	}
	// Unknown key, missing timestamp: HTTP_401, never MISSING_APP_KEY.
	r = signedH("GET", "/open/v1/order/detail?order_code=x", "n3", nil, now.Unix(), bound)
	r.Header.Set("X-App-Key", "ak_nobody")
	if pr := problemOf(mustFail(p.Verify(r, nil))); pr == nil || pr.Code != "HTTP_401" {
		t.Errorf("unknown key: %+v, want HTTP_401", pr)
	}
	// Without X-App-Key the request is scheme M, as before.
	m := httptest.NewRequest("GET", "/open/v1/channel/users/1", nil)
	sec := strconv.FormatInt(now.Unix(), 10)
	m.Header.Set("X-App-Id", "9")
	m.Header.Set("X-Timestamp", sec)
	m.Header.Set("X-Signature", auth.SignM(bound.AppKey, sec, bound.AppSecret, nil))
	if _, err := p.Verify(m, nil); err != nil {
		t.Errorf("scheme M: %v", err)
	}
	// Scheme H counts against the app's rate limit like scheme M.
	p.M.Limiter = denyAll{}
	if pr := problemOf(mustFail(p.Verify(signedH("GET", "/open/v1/channel/users/1", "n4", nil, now.Unix(), bound), nil))); pr == nil || pr.Status != 429 || pr.Code != "HTTP_429" {
		t.Errorf("scheme H past the rate limit: %+v, want 429 HTTP_429", pr)
	}
	// A scope the app lacks is 403 as under scheme M.
	p.M.Limiter = nil
	if pr := problemOf(mustFail(p.Verify(signedH("GET", "/open/v1/order/detail", "n5", nil, now.Unix(), bound), nil))); pr == nil || pr.Code != "SCOPE_NOT_GRANTED" {
		t.Errorf("ungranted scope: %+v, want SCOPE_NOT_GRANTED", pr)
	}
}

func mustFail(_ domain.App, err error) error { return err }
