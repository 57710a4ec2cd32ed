package auth_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// On Postgres read models a snapshot read records its signature's route
// binding in the round trip of its own query: the binding must
// hold exactly as before. A write's signature replayed as a snapshot read is
// refused; a snapshot read that is refused (unknown user, bad parameter) or
// answered still binds its signature, so replaying it as a delete is refused
// and appends nothing.
func TestSnapshotReadBindsItsSignature(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		clock := &harness.ShiftClock{}
		cfg.Now = clock.Now
		p := harness.Start(t, cfg)
		a := p.CreateApp("partner")
		var reg harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("bind-1"), http.StatusCreated, "0").Data(t, &reg)
		user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
		deleteMember := fmt.Sprintf("%s/family-members/%d", user, reg.FamilyMembers[1].MemberID)
		// Bodyless requests of one app in one second share a signature:
		// each step signs in its own second.
		second := time.Now()
		next := func() time.Time { second = second.Add(time.Second); return second }

		del := a.Request("DELETE", deleteMember, nil, next())
		if res := p.Send(del); res.Status != http.StatusOK {
			t.Fatalf("DELETE member: %d %s", res.Status, res.Raw)
		}
		clock.Advance(auth.BindingGrace + 100*time.Millisecond)
		if res := a.Replay(del, "GET", user, nil); res.Status != http.StatusUnauthorized || res.Code() != "HTTP_401" {
			t.Errorf("DELETE headers replayed as a snapshot read: %d %s, want 401 HTTP_401", res.Status, res.Raw)
		}

		before := p.EventCount()
		for _, read := range []struct {
			path   string
			status int
		}{
			{user, http.StatusOK},
			{"/open/v1/channel/users/999999", http.StatusNotFound},
			{user + "?updated_after=yesterday", http.StatusUnprocessableEntity},
		} {
			get := a.Request("GET", read.path, nil, next())
			if res := p.Send(get); res.Status != read.status {
				t.Fatalf("GET %s: %d %s, want %d", read.path, res.Status, res.Raw, read.status)
			}
			clock.Advance(auth.BindingGrace + 100*time.Millisecond)
			if res := a.Replay(get, "DELETE", fmt.Sprintf("%s/family-groups/%d", user, reg.FamilyGroups[0].FamilyGroupID), nil); res.Status != http.StatusUnauthorized || res.Code() != "HTTP_401" {
				t.Errorf("headers of GET %s (%d) replayed as a delete: %d %s, want 401 HTTP_401", read.path, read.status, res.Status, res.Raw)
			}
			// The partner's identical retry of the read answers as before.
			if res := a.Replay(get, "GET", read.path, nil); res.Status != read.status {
				t.Errorf("retry of GET %s: %d %s, want %d", read.path, res.Status, res.Raw, read.status)
			}
		}
		if n := p.EventCount(); n != before {
			t.Errorf("the replays appended %d events", n-before)
		}
		if s := a.Snapshot(user); len(s.FamilyGroups) != 1 || len(s.FamilyMembers) != 1 {
			t.Errorf("after the replays: %d groups, %d members; want 1 and 1", len(s.FamilyGroups), len(s.FamilyMembers))
		}
	})
}
