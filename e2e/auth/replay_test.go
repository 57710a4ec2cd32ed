package auth_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// Scheme M signs neither method nor path, so the headers of a captured GET
// deleted a family member and a signed family-group body created a group
// on another user. Each accepted signature is bound to its method and path
// for its window: elsewhere, past auth.BindingGrace after its first use, it
// is 401 HTTP_401 and appends nothing; an identical retry still works.
func TestSchemeMSignatureIsBoundToItsRoute(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		clock := &harness.ShiftClock{}
		cfg.Now = clock.Now
		p := harness.Start(t, cfg)
		a := p.CreateApp("partner")
		var reg harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("victim"), http.StatusCreated, "0").Data(t, &reg)
		user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
		member := reg.FamilyMembers[1].MemberID
		var other harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", map[string]any{"channel_user_id": "bystander", "user": map[string]any{"name": "韩梅梅"}}, http.StatusCreated, "0").Data(t, &other)
		otherUser := fmt.Sprintf("/open/v1/channel/users/%d", other.OpenUserID)

		// Attack 1: the headers of a snapshot read, replayed as a delete.
		now := time.Now()
		get := a.Request("GET", user, nil, now)
		if res := p.Send(get); res.Status != http.StatusOK {
			t.Fatalf("GET snapshot: %d %s", res.Status, res.Raw)
		}
		clock.Advance(auth.BindingGrace + 100*time.Millisecond)
		before := p.EventCount()
		for _, target := range []struct{ method, path string }{
			{"DELETE", fmt.Sprintf("%s/family-members/%d", user, member)},
			{"DELETE", fmt.Sprintf("%s/family-groups/%d", user, reg.FamilyGroups[0].FamilyGroupID)},
		} {
			res := a.Replay(get, target.method, target.path, nil)
			if res.Status != http.StatusUnauthorized || res.Code() != "HTTP_401" {
				t.Errorf("GET headers replayed as %s %s: %d %s, want 401 HTTP_401", target.method, target.path, res.Status, res.Raw)
			}
		}
		if n := p.EventCount(); n != before {
			t.Errorf("the replays appended %d events", n-before)
		}
		if s := a.Snapshot(user); len(s.FamilyMembers) != 2 || len(s.FamilyGroups) != 1 {
			t.Errorf("after the replays the user has %d groups and %d members, want 1 and 2", len(s.FamilyGroups), len(s.FamilyMembers))
		}
		// The partner's own identical retry of the read still works; its
		// headers on another read, past the grace, do not.
		if res := a.Replay(get, "GET", user, nil); res.Status != http.StatusOK {
			t.Errorf("identical retry of the read: %d %s", res.Status, res.Raw)
		}
		for _, path := range []string{otherUser, user + "?channel_user_id=victim"} {
			if res := a.Replay(get, "GET", path, nil); res.Status != http.StatusUnauthorized || res.Code() != "HTTP_401" {
				t.Errorf("read headers on %s past the grace: %d %s, want 401 HTTP_401", path, res.Status, res.Raw)
			}
		}

		// Attack 2: a signed family-group body replayed on another user's path.
		body := harness.Encode(t, map[string]any{"app_group_id": 77, "name": "Grandparents"})
		post := a.Request("POST", user+"/family-groups", body, time.Now())
		first := p.Send(post)
		if first.Status != http.StatusCreated {
			t.Fatalf("POST family group: %d %s", first.Status, first.Raw)
		}
		clock.Advance(auth.BindingGrace + 100*time.Millisecond)
		before = p.EventCount()
		if res := a.Replay(post, "POST", otherUser+"/family-groups", body); res.Status != http.StatusUnauthorized || res.Code() != "HTTP_401" {
			t.Errorf("family-group body replayed on another user: %d %s, want 401 HTTP_401", res.Status, res.Raw)
		}
		if res := a.Replay(post, "PATCH", user, body); res.Status != http.StatusUnauthorized || res.Code() != "HTTP_401" {
			t.Errorf("family-group body replayed as PATCH: %d %s, want 401 HTTP_401", res.Status, res.Raw)
		}
		if n := p.EventCount(); n != before {
			t.Errorf("the replays appended %d events", n-before)
		}
		if s := a.Snapshot(otherUser); len(s.FamilyGroups) != 0 {
			t.Errorf("the other user has groups %+v, want none", s.FamilyGroups)
		}

		// An identical retry of the write is answered its first answer and changes nothing.
		retry := a.Replay(post, "POST", user+"/family-groups", body)
		if retry.Status != first.Status || !bytes.Equal(retry.Raw, first.Raw) || retry.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("identical retry of the POST: %d %s, want the first answer replayed", retry.Status, retry.Raw)
		}
		if n := p.EventCount(); n != before {
			t.Errorf("the identical retry appended %d events", n-before)
		}
	})
}

// The refusal is logged with its reason for support, while the partner sees
// only the same HTTP_401 as any other failure.
func TestSchemeMRouteMismatchIsLoggedWithItsReason(t *testing.T) {
	t.Parallel()
	logs := &harness.SyncBuffer{}
	clock := &harness.ShiftClock{}
	p := harness.Start(t, node.Config{DataDir: t.TempDir(), Logger: slog.New(slog.NewJSONHandler(logs, nil)), Now: clock.Now})
	a := p.CreateApp("logged")
	get := a.Request("GET", "/open/v1/webhooks/events", nil, time.Now())
	if res := p.Send(get); res.Status != http.StatusOK {
		t.Fatalf("GET: %d %s", res.Status, res.Raw)
	}
	clock.Advance(auth.BindingGrace + 100*time.Millisecond)
	if res := a.Replay(get, "DELETE", "/open/v1/channel/users/1/family-members/1", nil); res.Status != http.StatusUnauthorized || res.Code() != "HTTP_401" {
		t.Fatalf("replay: %d %s", res.Status, res.Raw)
	}
	found := false
	for _, l := range logs.AccessLines(t) {
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
