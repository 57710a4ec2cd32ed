package node_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// replay sends a request to path with method and body, carrying the scheme M
// headers of an earlier request, as an attacker who captured them would.
func (a *app) replay(captured *http.Request, method, path string, body []byte) response {
	a.p.t.Helper()
	req, err := http.NewRequest(method, a.p.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		a.p.t.Fatal(err)
	}
	for _, h := range []string{"Content-Type", "X-App-Id", "X-Timestamp", "X-Signature"} {
		req.Header.Set(h, captured.Header.Get(h))
	}
	return a.p.send(req)
}

// Scheme M signs neither method nor path, so the headers of a captured GET
// deleted a family member and a signed family-group body created a group
// on another user. Each accepted signature is bound to its method and path
// for its window: elsewhere, past auth.BindingGrace after its first use, it
// is 401 HTTP_401 and appends nothing; an identical retry still works.
func TestSchemeMSignatureIsBoundToItsRoute(t *testing.T) {
	t.Parallel()
	readModels(t, func(t *testing.T, cfg node.Config) {
		clock := &shiftClock{}
		cfg.Now = clock.Now
		p := start(t, cfg)
		a := p.createApp("partner")
		var reg registerData
		a.expect("POST", "/open/v1/channel/users", registerBody("victim"), http.StatusCreated, "0").data(t, &reg)
		user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
		member := reg.FamilyMembers[1].MemberID
		var other registerData
		a.expect("POST", "/open/v1/channel/users", map[string]any{"channel_user_id": "bystander", "user": map[string]any{"name": "韩梅梅"}}, http.StatusCreated, "0").data(t, &other)
		otherUser := fmt.Sprintf("/open/v1/channel/users/%d", other.OpenUserID)

		// Attack 1: the headers of a snapshot read, replayed as a delete.
		now := time.Now()
		get := a.request("GET", user, nil, now)
		if res := p.send(get); res.Status != http.StatusOK {
			t.Fatalf("GET snapshot: %d %s", res.Status, res.Raw)
		}
		clock.Advance(auth.BindingGrace + 100*time.Millisecond)
		before := p.eventCount()
		for _, target := range []struct{ method, path string }{
			{"DELETE", fmt.Sprintf("%s/family-members/%d", user, member)},
			{"DELETE", fmt.Sprintf("%s/family-groups/%d", user, reg.FamilyGroups[0].FamilyGroupID)},
		} {
			res := a.replay(get, target.method, target.path, nil)
			if res.Status != http.StatusUnauthorized || res.code() != "HTTP_401" {
				t.Errorf("GET headers replayed as %s %s: %d %s, want 401 HTTP_401", target.method, target.path, res.Status, res.Raw)
			}
		}
		if n := p.eventCount(); n != before {
			t.Errorf("the replays appended %d events", n-before)
		}
		if s := a.snapshot(user); len(s.FamilyMembers) != 2 || len(s.FamilyGroups) != 1 {
			t.Errorf("after the replays the user has %d groups and %d members, want 1 and 2", len(s.FamilyGroups), len(s.FamilyMembers))
		}
		// The partner's own identical retry of the read still works; its
		// headers on another read, past the grace, do not.
		if res := a.replay(get, "GET", user, nil); res.Status != http.StatusOK {
			t.Errorf("identical retry of the read: %d %s", res.Status, res.Raw)
		}
		for _, path := range []string{otherUser, user + "?channel_user_id=victim"} {
			if res := a.replay(get, "GET", path, nil); res.Status != http.StatusUnauthorized || res.code() != "HTTP_401" {
				t.Errorf("read headers on %s past the grace: %d %s, want 401 HTTP_401", path, res.Status, res.Raw)
			}
		}

		// Attack 2: a signed family-group body replayed on another user's path.
		body := encode(t, map[string]any{"app_group_id": 77, "name": "Grandparents"})
		post := a.request("POST", user+"/family-groups", body, time.Now())
		first := p.send(post)
		if first.Status != http.StatusCreated {
			t.Fatalf("POST family group: %d %s", first.Status, first.Raw)
		}
		clock.Advance(auth.BindingGrace + 100*time.Millisecond)
		before = p.eventCount()
		if res := a.replay(post, "POST", otherUser+"/family-groups", body); res.Status != http.StatusUnauthorized || res.code() != "HTTP_401" {
			t.Errorf("family-group body replayed on another user: %d %s, want 401 HTTP_401", res.Status, res.Raw)
		}
		if res := a.replay(post, "PATCH", user, body); res.Status != http.StatusUnauthorized || res.code() != "HTTP_401" {
			t.Errorf("family-group body replayed as PATCH: %d %s, want 401 HTTP_401", res.Status, res.Raw)
		}
		if n := p.eventCount(); n != before {
			t.Errorf("the replays appended %d events", n-before)
		}
		if s := a.snapshot(otherUser); len(s.FamilyGroups) != 0 {
			t.Errorf("the other user has groups %+v, want none", s.FamilyGroups)
		}

		// An identical retry of the write is answered its first answer and changes nothing.
		retry := a.replay(post, "POST", user+"/family-groups", body)
		if retry.Status != first.Status || !bytes.Equal(retry.Raw, first.Raw) || retry.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("identical retry of the POST: %d %s, want the first answer replayed", retry.Status, retry.Raw)
		}
		if n := p.eventCount(); n != before {
			t.Errorf("the identical retry appended %d events", n-before)
		}
	})
}

// The refusal is logged with its reason for support, while the partner sees
// only the same HTTP_401 as any other failure.
func TestSchemeMRouteMismatchIsLoggedWithItsReason(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	clock := &shiftClock{}
	p := start(t, node.Config{DataDir: t.TempDir(), Logger: slog.New(slog.NewJSONHandler(logs, nil)), Now: clock.Now})
	a := p.createApp("logged")
	get := a.request("GET", "/open/v1/webhooks/events", nil, time.Now())
	if res := p.send(get); res.Status != http.StatusOK {
		t.Fatalf("GET: %d %s", res.Status, res.Raw)
	}
	clock.Advance(auth.BindingGrace + 100*time.Millisecond)
	if res := a.replay(get, "DELETE", "/open/v1/channel/users/1/family-members/1", nil); res.Status != http.StatusUnauthorized || res.code() != "HTTP_401" {
		t.Fatalf("replay: %d %s", res.Status, res.Raw)
	}
	found := false
	for _, l := range logs.accessLines(t) {
		if l["route"] == "/open/v1/channel/users/:openUserId/family-members/:memberId" {
			found = true
			if l["auth_failure"] != "signature_route_mismatch" || l["app_id"] != float64(a.ID) || l["code"] != "HTTP_401" {
				t.Errorf("access log line %v, want auth_failure signature_route_mismatch for app %d", l, a.ID)
			}
		}
	}
	if !found {
		t.Fatal("no access log line for the replay")
	}
}
