package node_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/node"
)

// doH sends a scheme H request with a fresh nonce, signed now.
func (a *app) doH(method, uri string, body any) response {
	a.p.t.Helper()
	return a.p.send(a.requestH(method, uri, encode(a.p.t, body), freshNonce(), time.Now()))
}

// A partner may sign every partner route with scheme H instead of scheme M:
// the whole channel-user life cycle runs on it, bodyless requests of one
// second never clash (each has its own nonce and signs its route), and a
// scheme H failure on these routes is the route's 401 HTTP_401.
func TestSchemeHOnPartnerRoutes(t *testing.T) {
	t.Parallel()
	readModels(t, func(t *testing.T, cfg node.Config) {
		p := start(t, cfg)
		a := p.createApp("partner")
		res := a.doH("POST", "/open/v1/channel/users", registerBody("h-1"))
		if res.Status != http.StatusCreated {
			t.Fatalf("register by scheme H: %d %s", res.Status, res.Raw)
		}
		var reg registerData
		res.data(t, &reg)
		user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
		// A read and two bodyless writes in one second, all scheme H.
		now := time.Now()
		for _, step := range []struct {
			method, path string
			status       int
		}{
			{"GET", user, http.StatusOK},
			{"DELETE", fmt.Sprintf("%s/family-members/%d", user, reg.FamilyMembers[1].MemberID), http.StatusOK},
			{"GET", user + "?channel_user_id=h-1", http.StatusOK},
			{"DELETE", fmt.Sprintf("%s/family-groups/%d", user, reg.FamilyGroups[0].FamilyGroupID), http.StatusOK},
		} {
			if res := p.send(a.requestH(step.method, step.path, nil, freshNonce(), now)); res.Status != step.status {
				t.Fatalf("%s %s by scheme H: %d %s", step.method, step.path, res.Status, res.Raw)
			}
		}
		if s := a.snapshot(user); len(s.FamilyGroups) != 0 || len(s.FamilyMembers) != 0 {
			t.Errorf("after the scheme H deletes: %d groups, %d members; want none", len(s.FamilyGroups), len(s.FamilyMembers))
		}
		if res := a.doH("PATCH", user, map[string]any{"nickname": "H"}); res.Status != http.StatusOK {
			t.Errorf("PATCH by scheme H: %d %s", res.Status, res.Raw)
		}

		before := p.eventCount()
		// Failures: the route's HTTP_401, whatever scheme H would have said.
		patch := encode(t, map[string]any{"nickname": "X"})
		bad := []struct {
			name string
			req  func() *http.Request
		}{
			{"wrong signature", func() *http.Request {
				r := a.requestH("PATCH", user, patch, freshNonce(), time.Now())
				r.Header.Set("X-Signature", strings.Repeat("ab", 32))
				return r
			}},
			{"unknown key", func() *http.Request {
				r := a.requestH("PATCH", user, patch, freshNonce(), time.Now())
				r.Header.Set("X-App-Key", "ak_nobody")
				return r
			}},
			{"stale", func() *http.Request {
				return a.requestH("PATCH", user, patch, freshNonce(), time.Now().Add(-302*time.Second))
			}},
			{"signed for another path", func() *http.Request {
				r := a.requestH("PATCH", user+"0", patch, freshNonce(), time.Now())
				r.URL.Path = user
				return r
			}},
			{"good scheme M beside a bad scheme H", func() *http.Request {
				r := a.request("PATCH", user, patch, time.Now())
				r.Header.Set("X-App-Key", a.Key)
				r.Header.Set("X-Nonce", freshNonce())
				return r
			}},
		}
		for _, c := range bad {
			if res := p.send(c.req()); res.Status != http.StatusUnauthorized || res.code() != "HTTP_401" {
				t.Errorf("%s: %d %s, want 401 HTTP_401", c.name, res.Status, res.Raw)
			}
		}
		if n := p.eventCount(); n != before {
			t.Errorf("refused scheme H requests appended %d events", n-before)
		}
		// A replayed scheme H write (same nonce) is refused and has no effect.
		nonce := freshNonce()
		first := a.requestH("POST", user+"/family-groups", encode(t, map[string]any{"app_group_id": 9, "name": "Again"}), nonce, time.Now())
		if res := p.send(first); res.Status != http.StatusCreated {
			t.Fatalf("group by scheme H: %d %s", res.Status, res.Raw)
		}
		mid := p.eventCount()
		again := a.requestH("POST", user+"/family-groups", encode(t, map[string]any{"app_group_id": 9, "name": "Again"}), nonce, time.Now())
		again.Header = first.Header.Clone()
		if res := p.send(again); res.Status != http.StatusUnauthorized || res.code() != "HTTP_401" {
			t.Errorf("replayed scheme H write: %d %s, want 401 HTTP_401", res.Status, res.Raw)
		}
		if n := p.eventCount(); n != mid {
			t.Errorf("the replayed scheme H write appended %d events", n-mid)
		}
	})
}

// Every partner route the spec signs with scheme M also takes scheme H: a
// good scheme H signature gets past authentication (whatever the route then
// answers), a bad one is 401 HTTP_401.
func TestSchemeHAcceptedOnEveryPartnerRoute(t *testing.T) {
	t.Parallel()
	p := start(t, node.Config{DataDir: t.TempDir()})
	a := p.createApp("partner")
	param := regexp.MustCompile(`:[A-Za-z]+`)
	n := 0
	for _, k := range handlerRouteKeys() {
		method, pattern, _ := strings.Cut(k, " ")
		if !strings.HasPrefix(pattern, "/open/v1/") || strings.HasPrefix(pattern, "/open/v1/health-reports/") {
			continue // the report pull is scheme H with its own codes
		}
		n++
		path := param.ReplaceAllString(pattern, "999999")
		var body []byte
		if method != "GET" && method != "DELETE" {
			body = []byte(`{}`)
		}
		res := p.send(a.requestH(method, path, body, freshNonce(), time.Now()))
		if c := res.code(); res.Status == http.StatusUnauthorized || c == "SCOPE_NOT_GRANTED" || c == "APP_SUSPENDED" {
			t.Errorf("%s %s by scheme H: %d %s, want past authentication", method, path, res.Status, res.Raw)
		}
		if n > 5 {
			continue // refusals spend the source's failure budget; a few suffice
		}
		r := a.requestH(method, path, body, freshNonce(), time.Now())
		r.Header.Set("X-Signature", strings.Repeat("cd", 32))
		if res := p.send(r); res.Status != http.StatusUnauthorized || res.code() != "HTTP_401" {
			t.Errorf("%s %s with a wrong scheme H signature: %d %s, want 401 HTTP_401", method, path, res.Status, res.Raw)
		}
	}
	if n < 15 {
		t.Fatalf("only %d partner routes found", n)
	}
}

// An operator sets an app to require scheme H: its scheme M requests are
// then refused 401 HTTP_401 with a message saying so, scheme H passes, the
// app read shows the setting, and setting it back restores scheme M. The
// default is scheme M, as the spec says.
func TestAppRequiresSchemeH(t *testing.T) {
	t.Parallel()
	p := start(t, node.Config{DataDir: t.TempDir()})
	a := p.createApp("strict")
	path := fmt.Sprintf("/admin/v1/apps/%d/authentication", a.ID)
	var view struct {
		RequireSchemeH *bool `json:"require_scheme_h"`
	}
	p.adminOK("GET", fmt.Sprintf("/admin/v1/apps/%d", a.ID), nil, 200).data(t, &view)
	if view.RequireSchemeH == nil || *view.RequireSchemeH {
		t.Fatalf("default require_scheme_h %v, want false", view.RequireSchemeH)
	}
	a.expect("GET", probe, nil, http.StatusNotFound, "USER_NOT_FOUND")

	before := p.eventCount()
	for _, bad := range []string{`{}`, `{"require_scheme_h":null}`, `{"require_scheme_h":"yes"}`} {
		if res := p.admin("PUT", path, bad); res.Status != 422 || res.code() != "VALIDATION_ERROR" || res.Env.Errors["require_scheme_h"] == nil {
			t.Errorf("body %s: %d %s, want 422 on require_scheme_h", bad, res.Status, res.Raw)
		}
	}
	if res := p.admin("PUT", "/admin/v1/apps/999999/authentication", map[string]any{"require_scheme_h": true}); res.Status != 404 || res.code() != "APP_NOT_FOUND" {
		t.Errorf("unknown app: %d %s", res.Status, res.Raw)
	}
	if res := p.admin("PUT", path, map[string]any{"require_scheme_h": false}); res.Status != 200 {
		t.Errorf("setting the default again: %d %s", res.Status, res.Raw)
	}
	if n := p.eventCount(); n != before {
		t.Fatalf("refused or unchanged settings appended %d events", n-before)
	}

	res := p.adminOK("PUT", path, map[string]any{"require_scheme_h": true}, 200)
	if !strings.Contains(string(res.Raw), `"require_scheme_h":true`) {
		t.Errorf("answer %s", res.Raw)
	}
	if n := p.eventCount(); n != before+1 {
		t.Errorf("requiring scheme H appended %d events, want 1", n-before)
	}
	p.adminOK("GET", fmt.Sprintf("/admin/v1/apps/%d", a.ID), nil, 200).data(t, &view)
	if view.RequireSchemeH == nil || !*view.RequireSchemeH {
		t.Errorf("require_scheme_h %v, want true", view.RequireSchemeH)
	}
	before = p.eventCount()
	m := a.do("POST", "/open/v1/channel/users", registerBody("strict-1"))
	if m.Status != http.StatusUnauthorized || m.code() != "HTTP_401" || !strings.Contains(m.Env.Message, "requires scheme H") {
		t.Errorf("scheme M of an app requiring scheme H: %d %s", m.Status, m.Raw)
	}
	if n := p.eventCount(); n != before {
		t.Errorf("the refused scheme M write appended %d events", n-before)
	}
	if res := a.doH("POST", "/open/v1/channel/users", registerBody("strict-1")); res.Status != http.StatusCreated {
		t.Errorf("scheme H of an app requiring it: %d %s", res.Status, res.Raw)
	}
	p.adminOK("PUT", path, map[string]any{"require_scheme_h": false}, 200)
	a.expect("GET", probe, nil, http.StatusNotFound, "USER_NOT_FOUND")
}
