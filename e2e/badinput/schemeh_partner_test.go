package badinput_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// A partner may sign every partner route with scheme H instead of scheme M:
// the whole channel-user life cycle runs on it, bodyless requests of one
// second never clash (each has its own nonce and signs its route), and a
// scheme H failure on these routes is the route's 401 HTTP_401.
func TestSchemeHOnPartnerRoutes(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		p := harness.Start(t, cfg)
		a := p.CreateApp("partner")
		res := a.DoH("POST", "/open/v1/channel/users", harness.RegisterBody("h-1"))
		if res.Status != http.StatusCreated {
			t.Fatalf("register by scheme H: %d %s", res.Status, res.Raw)
		}
		var reg harness.RegisterData
		res.Data(t, &reg)
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
			if res := p.Send(a.RequestH(step.method, step.path, nil, harness.FreshNonce(), now)); res.Status != step.status {
				t.Fatalf("%s %s by scheme H: %d %s", step.method, step.path, res.Status, res.Raw)
			}
		}
		if s := a.Snapshot(user); len(s.FamilyGroups) != 0 || len(s.FamilyMembers) != 0 {
			t.Errorf("after the scheme H deletes: %d groups, %d members; want none", len(s.FamilyGroups), len(s.FamilyMembers))
		}
		if res := a.DoH("PATCH", user, map[string]any{"nickname": "H"}); res.Status != http.StatusOK {
			t.Errorf("PATCH by scheme H: %d %s", res.Status, res.Raw)
		}

		before := p.EventCount()
		// Failures: the route's HTTP_401, whatever scheme H would have said.
		patch := harness.Encode(t, map[string]any{"nickname": "X"})
		bad := []struct {
			name string
			req  func() *http.Request
		}{
			{"wrong signature", func() *http.Request {
				r := a.RequestH("PATCH", user, patch, harness.FreshNonce(), time.Now())
				r.Header.Set("X-Signature", strings.Repeat("ab", 32))
				return r
			}},
			{"unknown key", func() *http.Request {
				r := a.RequestH("PATCH", user, patch, harness.FreshNonce(), time.Now())
				r.Header.Set("X-App-Key", "ak_nobody")
				return r
			}},
			{"stale", func() *http.Request {
				return a.RequestH("PATCH", user, patch, harness.FreshNonce(), time.Now().Add(-302*time.Second))
			}},
			{"signed for another path", func() *http.Request {
				r := a.RequestH("PATCH", user+"0", patch, harness.FreshNonce(), time.Now())
				r.URL.Path = user
				return r
			}},
			{"good scheme M beside a bad scheme H", func() *http.Request {
				r := a.Request("PATCH", user, patch, time.Now())
				r.Header.Set("X-App-Key", a.Key)
				r.Header.Set("X-Nonce", harness.FreshNonce())
				return r
			}},
		}
		for _, c := range bad {
			if res := p.Send(c.req()); res.Status != http.StatusUnauthorized || res.Code() != "HTTP_401" {
				t.Errorf("%s: %d %s, want 401 HTTP_401", c.name, res.Status, res.Raw)
			}
		}
		if n := p.EventCount(); n != before {
			t.Errorf("refused scheme H requests appended %d events", n-before)
		}
		// A replayed scheme H write (same nonce) is refused and has no effect.
		nonce := harness.FreshNonce()
		first := a.RequestH("POST", user+"/family-groups", harness.Encode(t, map[string]any{"app_group_id": 9, "name": "Again"}), nonce, time.Now())
		if res := p.Send(first); res.Status != http.StatusCreated {
			t.Fatalf("group by scheme H: %d %s", res.Status, res.Raw)
		}
		mid := p.EventCount()
		again := a.RequestH("POST", user+"/family-groups", harness.Encode(t, map[string]any{"app_group_id": 9, "name": "Again"}), nonce, time.Now())
		again.Header = first.Header.Clone()
		if res := p.Send(again); res.Status != http.StatusUnauthorized || res.Code() != "HTTP_401" {
			t.Errorf("replayed scheme H write: %d %s, want 401 HTTP_401", res.Status, res.Raw)
		}
		if n := p.EventCount(); n != mid {
			t.Errorf("the replayed scheme H write appended %d events", n-mid)
		}
	})
}

// Every partner route the spec signs with scheme M also takes scheme H: a
// good scheme H signature gets past authentication (whatever the route then
// answers), a bad one is 401 HTTP_401.
func TestSchemeHAcceptedOnEveryPartnerRoute(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir()})
	a := p.CreateApp("partner")
	param := regexp.MustCompile(`:[A-Za-z]+`)
	n := 0
	for _, k := range handlerRouteKeys() {
		method, pattern, _ := strings.Cut(k, " ")
		if !strings.HasPrefix(pattern, "/open/v1/") || strings.HasPrefix(pattern, "/open/v1/health-reports/") {
			continue // the report pull is scheme H with its own codes
		}
		if strings.HasPrefix(pattern, "/open/v1/event-types") {
			continue // the event catalog is public: no signature is checked
		}
		n++
		path := param.ReplaceAllString(pattern, "999999")
		var body []byte
		if method != "GET" && method != "DELETE" {
			body = []byte(`{}`)
		}
		res := p.Send(a.RequestH(method, path, body, harness.FreshNonce(), time.Now()))
		if c := res.Code(); res.Status == http.StatusUnauthorized || c == "SCOPE_NOT_GRANTED" || c == "APP_SUSPENDED" {
			t.Errorf("%s %s by scheme H: %d %s, want past authentication", method, path, res.Status, res.Raw)
		}
		if n > 5 {
			continue // refusals spend the source's failure budget; a few suffice
		}
		r := a.RequestH(method, path, body, harness.FreshNonce(), time.Now())
		r.Header.Set("X-Signature", strings.Repeat("cd", 32))
		if res := p.Send(r); res.Status != http.StatusUnauthorized || res.Code() != "HTTP_401" {
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
	p := harness.Start(t, node.Config{DataDir: t.TempDir()})
	a := p.CreateApp("strict")
	path := fmt.Sprintf("/admin/v1/apps/%d/authentication", a.ID)
	var view struct {
		RequireSchemeH *bool `json:"require_scheme_h"`
	}
	p.AdminOK("GET", fmt.Sprintf("/admin/v1/apps/%d", a.ID), nil, 200).Data(t, &view)
	if view.RequireSchemeH == nil || *view.RequireSchemeH {
		t.Fatalf("default require_scheme_h %v, want false", view.RequireSchemeH)
	}
	a.Expect("GET", harness.Probe, nil, http.StatusNotFound, "USER_NOT_FOUND")

	before := p.EventCount()
	for _, bad := range []string{`{}`, `{"require_scheme_h":null}`, `{"require_scheme_h":"yes"}`} {
		if res := p.Admin("PUT", path, bad); res.Status != 422 || res.Code() != "VALIDATION_ERROR" || res.Env.Errors["require_scheme_h"] == nil {
			t.Errorf("body %s: %d %s, want 422 on require_scheme_h", bad, res.Status, res.Raw)
		}
	}
	if res := p.Admin("PUT", "/admin/v1/apps/999999/authentication", map[string]any{"require_scheme_h": true}); res.Status != 404 || res.Code() != "APP_NOT_FOUND" {
		t.Errorf("unknown app: %d %s", res.Status, res.Raw)
	}
	if res := p.Admin("PUT", path, map[string]any{"require_scheme_h": false}); res.Status != 200 {
		t.Errorf("setting the default again: %d %s", res.Status, res.Raw)
	}
	if n := p.EventCount(); n != before {
		t.Fatalf("refused or unchanged settings appended %d events", n-before)
	}

	res := p.AdminOK("PUT", path, map[string]any{"require_scheme_h": true}, 200)
	if !strings.Contains(string(res.Raw), `"require_scheme_h":true`) {
		t.Errorf("answer %s", res.Raw)
	}
	if n := p.EventCount(); n != before+1 {
		t.Errorf("requiring scheme H appended %d events, want 1", n-before)
	}
	p.AdminOK("GET", fmt.Sprintf("/admin/v1/apps/%d", a.ID), nil, 200).Data(t, &view)
	if view.RequireSchemeH == nil || !*view.RequireSchemeH {
		t.Errorf("require_scheme_h %v, want true", view.RequireSchemeH)
	}
	before = p.EventCount()
	m := a.Do("POST", "/open/v1/channel/users", harness.RegisterBody("strict-1"))
	if m.Status != http.StatusUnauthorized || m.Code() != "HTTP_401" || !strings.Contains(m.Env.Message, "requires scheme H") {
		t.Errorf("scheme M of an app requiring scheme H: %d %s", m.Status, m.Raw)
	}
	if n := p.EventCount(); n != before {
		t.Errorf("the refused scheme M write appended %d events", n-before)
	}
	if res := a.DoH("POST", "/open/v1/channel/users", harness.RegisterBody("strict-1")); res.Status != http.StatusCreated {
		t.Errorf("scheme H of an app requiring it: %d %s", res.Status, res.Raw)
	}
	p.AdminOK("PUT", path, map[string]any{"require_scheme_h": false}, 200)
	a.Expect("GET", harness.Probe, nil, http.StatusNotFound, "USER_NOT_FOUND")
}
