package auth_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// A client that signs scheme M exactly as the spec says reads a snapshot
// and, in the same second, deletes a family member and dissolves a group:
// all three bodyless requests carry one signature, and all succeed, on one
// node (both read-model stores) and across two nodes sharing Postgres.
// The nodes' clock holds still while the four requests are sent, so a
// loaded machine that takes seconds to serve them still sees them in one
// second, as a partner's quick succession is.
func TestSpecFaithfulSchemeMReadAndDeletesInOneSecond(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, clk *heldClock, one, two *harness.Platform) {
		a := one.CreateApp("partner")
		var reg harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("same-second"), http.StatusCreated, "0").Data(t, &reg)
		user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
		b := a.On(two)
		sec := clk.hold().Unix()
		steps := []struct {
			a            *harness.App
			method, path string
		}{
			{a, "GET", user},
			{b, "DELETE", fmt.Sprintf("%s/family-members/%d", user, reg.FamilyMembers[1].MemberID)},
			{a, "GET", user + "?channel_user_id=same-second"},
			{b, "DELETE", fmt.Sprintf("%s/family-groups/%d", user, reg.FamilyGroups[0].FamilyGroupID)},
		}
		for _, s := range steps {
			if res := s.a.P.Send(s.a.SignedAt(s.method, s.path, nil, sec)); res.Status != http.StatusOK {
				t.Fatalf("%s %s signed at the same second: %d %s", s.method, s.path, res.Status, res.Raw)
			}
		}
		clk.release()
		if s := a.Snapshot(user); len(s.FamilyGroups) != 0 || len(s.FamilyMembers) != 0 {
			t.Errorf("after the deletes: %d groups, %d members; want none", len(s.FamilyGroups), len(s.FamilyMembers))
		}
	}
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		clk := &heldClock{}
		cfg.Now = clk.now
		p := harness.Start(t, cfg)
		run(t, clk, p, p)
	})
	t.Run("two nodes", func(t *testing.T) {
		t.Parallel()
		clk := &heldClock{}
		pa, pb := harness.TwoNodes(t, func(c *node.Config) { c.Now = clk.now })
		run(t, clk, pa, pb)
	})
}

// heldClock is the wall clock, except between hold and release, when it
// stays at the instant hold returned.
type heldClock struct {
	mu   sync.Mutex
	held time.Time
}

func (c *heldClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.held.IsZero() {
		return c.held
	}
	return time.Now()
}

func (c *heldClock) hold() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = time.Now()
	return c.held
}

func (c *heldClock) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = time.Time{}
}

// Headers captured from a read and replayed later as a write on another
// route are refused (401 HTTP_401, nothing appended); inside the grace the
// same move succeeds (what an attacker can still do), and that write,
// replayed later on its own route, answers its first answer and appends
// nothing.
func TestCapturedSchemeMHeadersRefusedOnOtherRoutesAfterTheGrace(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		clock := &harness.ShiftClock{}
		cfg.Now = clock.Now
		p := harness.Start(t, cfg)
		a := p.CreateApp("partner")
		var reg harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("victim"), http.StatusCreated, "0").Data(t, &reg)
		user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
		member := fmt.Sprintf("%s/family-members/%d", user, reg.FamilyMembers[1].MemberID)
		group := fmt.Sprintf("%s/family-groups/%d", user, reg.FamilyGroups[0].FamilyGroupID)

		// A partner's read, captured; replayed past the grace.
		get := a.Request("GET", user, nil, time.Now())
		if res := p.Send(get); res.Status != http.StatusOK {
			t.Fatalf("GET snapshot: %d %s", res.Status, res.Raw)
		}
		clock.Advance(auth.BindingGrace + 100*time.Millisecond)
		before := p.EventCount()
		for _, target := range []struct{ method, path string }{{"DELETE", member}, {"DELETE", group}, {"GET", "/open/v1/channel/users/0?channel_user_id=victim"}} {
			if res := a.Replay(get, target.method, target.path, nil); res.Status != http.StatusUnauthorized || res.Code() != "HTTP_401" {
				t.Errorf("read headers replayed as %s %s past the grace: %d %s, want 401 HTTP_401", target.method, target.path, res.Status, res.Raw)
			}
		}
		if n := p.EventCount(); n != before {
			t.Errorf("the refused replays appended %d events", n-before)
		}
		if s := a.Snapshot(user); len(s.FamilyMembers) != 2 || len(s.FamilyGroups) != 1 {
			t.Fatalf("after the refused replays: %d groups, %d members; want 1 and 2", len(s.FamilyGroups), len(s.FamilyMembers))
		}
		// The partner's identical retry of its read still works.
		if res := a.Replay(get, "GET", user, nil); res.Status != http.StatusOK {
			t.Errorf("identical retry of the read: %d %s", res.Status, res.Raw)
		}

		// Inside the grace the move succeeds: the residual risk, bounded by it.
		// (A second of its own: the first read's signature is past its grace.)
		get = a.SignedAt("GET", user, nil, time.Now().Unix()-7)
		if res := p.Send(get); res.Status != http.StatusOK {
			t.Fatalf("GET snapshot: %d %s", res.Status, res.Raw)
		}
		clock.Advance(auth.BindingGrace / 2) // the rest of the grace is the test's margin
		first := a.Replay(get, "DELETE", member, nil)
		if first.Status != http.StatusOK {
			t.Fatalf("read headers as a delete inside the grace: %d %s", first.Status, first.Raw)
		}
		// That delete's headers, replayed on its own route long after:
		// the first answer, marked replayed, nothing appended.
		clock.Advance(time.Minute)
		before = p.EventCount()
		again := a.Replay(get, "DELETE", member, nil)
		if again.Status != first.Status || !bytes.Equal(again.Raw, first.Raw) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("the delete replayed on its route: %d %s (replayed %q), want the first answer %d %s replayed",
				again.Status, again.Raw, again.Header.Get("Idempotent-Replayed"), first.Status, first.Raw)
		}
		if n := p.EventCount(); n != before {
			t.Errorf("the replay appended %d events", n-before)
		}
	})
}

type cardItems struct {
	Items []struct {
		Remaining int64 `json:"remaining_quantity"`
	} `json:"items"`
}

// A captured verify-use replayed after its cooldown consumed the card
// again, each time. Its signature is now an implicit idempotency key: the
// replay answers the first answer (status and body), marked replayed, and
// appends nothing, whatever Idempotency-Key an attacker adds and however
// the signature's hex is cased; on one node and across nodes.
func TestSignedWriteReplayHasNoSecondEffect(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, clock *harness.ShiftClock, one, two *harness.Platform) {
		station, partner, item := harness.BenefitSetup(t, one)
		card := partner.Issue(item, 4, time.Now().Add(48*time.Hour).Format(time.RFC3339))
		// remaining reads the card as its issuer sees it, waiting (bounded)
		// for want: the station's writes are not the issuer's, so the
		// issuer's read does not wait for them. The event counts below
		// tell whether a replay consumed.
		remaining := func(want int64) int64 {
			deadline := time.Now().Add(10 * time.Second)
			for {
				var cd cardItems
				partner.Expect("GET", "/open/v1/benefit-cards/detail?card_number="+card, nil, 200, "0").Data(t, &cd)
				if got := cd.Items[0].Remaining; got == want || time.Now().After(deadline) {
					return got
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		body := harness.Encode(t, map[string]any{"card_number": card, "benefit_item_id": item, "points_code": "P-1"})
		captured := station.Request("POST", "/open/v1/benefit-cards/verify-use", body, time.Now())
		first := one.Send(captured)
		if r := remaining(3); first.Status != http.StatusOK || r != 3 {
			t.Fatalf("verify-use: %d %s, remaining %d", first.Status, first.Raw, r)
		}
		clock.Advance(11 * time.Second) // past the 10 s cooldown
		before := one.EventCount()
		replay := func(edit func(*http.Request)) harness.Response {
			req, err := http.NewRequest("POST", two.Srv.URL+"/open/v1/benefit-cards/verify-use", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header = captured.Header.Clone()
			if edit != nil {
				edit(req)
			}
			return two.Send(req)
		}
		for name, edit := range map[string]func(*http.Request){
			"as captured":                    nil,
			"with an Idempotency-Key added":  func(r *http.Request) { r.Header.Set("Idempotency-Key", "attacker-1") },
			"with another Idempotency-Key":   func(r *http.Request) { r.Header.Set("Idempotency-Key", "attacker-2") },
			"with the signature's hex upper": func(r *http.Request) { r.Header.Set("X-Signature", strings.ToUpper(r.Header.Get("X-Signature"))) },
		} {
			res := replay(edit)
			if res.Status != first.Status || !bytes.Equal(res.Raw, first.Raw) || res.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("replay %s: %d %s (replayed %q), want the first answer %d %s replayed", name, res.Status, res.Raw, res.Header.Get("Idempotent-Replayed"), first.Status, first.Raw)
			}
		}
		if n := one.EventCount(); n != before {
			t.Errorf("the replays appended %d events", n-before)
		}
		if r := remaining(3); r != 3 {
			t.Errorf("after the replays %d remain, want 3", r)
		}
		// The partner's own next verify-use, signed anew, consumes.
		station.Expect("POST", "/open/v1/benefit-cards/verify-use", body, 200, "0")
		if r := remaining(2); r != 2 {
			t.Errorf("after a second verify-use %d remain, want 2", r)
		}
	}
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		clock := &harness.ShiftClock{}
		cfg.Now = clock.Now
		p := harness.Start(t, cfg)
		run(t, clock, p, p)
	})
	t.Run("two nodes", func(t *testing.T) {
		t.Parallel()
		clock := &harness.ShiftClock{}
		pa, pb := harness.TwoNodes(t, func(c *node.Config) { c.Now = clock.Now })
		run(t, clock, pa, pb)
	})
}
