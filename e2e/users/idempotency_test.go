package users_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/webhooks"
)

func TestIdempotencyKeysReplayPartnerWrites(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		p := harness.Start(t, cfg)
		a := p.CreateApp("partner")
		now := time.Now()

		first := a.Keyed("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), "reg-u-1", now)
		if first.Status != http.StatusCreated {
			t.Fatalf("register: %d %s", first.Status, first.Raw)
		}
		var reg harness.RegisterData
		first.Data(t, &reg)
		n := p.EventCount()
		// Unkeyed, a repeat answers 200 created:false; keyed, it is the first answer again.
		harness.SameAnswer(t, "register", first, a.Keyed("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), "reg-u-1", now))
		user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
		if s := a.Snapshot(user); s.User.OpenUserID != reg.OpenUserID {
			t.Fatalf("snapshot after replay: %+v", s)
		}
		// The same key for another body is refused and does nothing.
		res := a.Keyed("POST", "/open/v1/channel/users", harness.RegisterBody("u-2"), "reg-u-1", now)
		if res.Status != 422 || res.Code() != "IDEMPOTENCY_KEY_REUSED" {
			t.Fatalf("reused key: %d %s", res.Status, res.Raw)
		}
		if got := p.EventCount(); got != n {
			t.Fatalf("replay or refusal appended %d events", got-n)
		}

		// A member upsert and its delete: retries answer as the first time,
		// where unkeyed retries would say created:false and 404.
		member := map[string]any{"app_user_id": "son", "app_group_id": 10, "name": "李小雷", "relationship": "SON"}
		up := a.Keyed("POST", user+"/family-members", member, "member-son", now)
		if up.Status != http.StatusCreated {
			t.Fatalf("upsert: %d %s", up.Status, up.Raw)
		}
		harness.SameAnswer(t, "upsert", up, a.Keyed("POST", user+"/family-members", member, "member-son", now))
		var m struct {
			MemberID int64 `json:"member_id"`
		}
		up.Data(t, &m)
		del := a.Keyed("DELETE", fmt.Sprintf("%s/family-members/%d", user, m.MemberID), nil, "del-son", now)
		if del.Status != http.StatusOK {
			t.Fatalf("delete: %d %s", del.Status, del.Raw)
		}
		n = p.EventCount()
		harness.SameAnswer(t, "delete", del, a.Keyed("DELETE", fmt.Sprintf("%s/family-members/%d", user, m.MemberID), nil, "del-son", now))
		a.Expect("DELETE", fmt.Sprintf("%s/family-members/%d", user, m.MemberID), nil, 404, "FAMILY_MEMBER_NOT_FOUND")
		if got := p.EventCount(); got != n {
			t.Fatalf("the delete's replay and the unkeyed retry appended %d events", got-n)
		}
		// A key is the app's own: another app's identical key is another request.
		b := p.CreateApp("other")
		b.Expect("GET", user, nil, 404, "USER_NOT_FOUND")
		if res := b.Keyed("DELETE", fmt.Sprintf("%s/family-members/%d", user, m.MemberID), nil, "del-son", now); res.Status != 404 || res.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("other app's key: %d %s", res.Status, res.Raw)
		}

		// Bad keys and bad bodies are refused before the key is claimed: nothing appended.
		n = p.EventCount()
		for _, key := range []string{strings.Repeat("k", 256), "naïve", "tab\tkey"} {
			res := a.Keyed("PATCH", user, map[string]any{"nickname": "x"}, key, now)
			if res.Status != 422 || res.Code() != "VALIDATION_ERROR" || res.Env.Errors["Idempotency-Key"] == nil {
				t.Fatalf("key %q: %d %s", key, res.Status, res.Raw)
			}
		}
		if res := a.Keyed("PATCH", user, map[string]any{"gender": 5}, "patch-1", now); res.Status != 422 || res.Env.Errors["gender"] == nil {
			t.Fatalf("bad body: %d %s", res.Status, res.Raw)
		}
		if got := p.EventCount(); got != n {
			t.Fatalf("bad input appended %d events", got-n)
		}
		// The key a bad body was sent with is still free for the corrected body.
		a.Keyed("PATCH", user, map[string]any{"nickname": "fixed"}, "patch-1", now)
		if s := a.Snapshot(user); s.User.Nickname == nil || *s.User.Nickname != "fixed" {
			t.Fatalf("patch after bad body: %+v", s.User)
		}

		// Idempotency records are bookkeeping: no webhook, no projection.
		recs, err := p.Node.Events.ReadAll(context.Background(), events.Position{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, rec := range recs {
			if !strings.HasPrefix(rec.Stream, "idempotency-") {
				continue
			}
			seen++
			env, err := p.Node.Registry.Decode(rec)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := webhooks.Render(env, p.Node.Location); ok {
				t.Fatalf("%s would become a webhook", rec.Type)
			}
			if bytes.Contains(rec.Data, []byte("李")) || bytes.Contains(rec.Data, []byte("reg-u-1")) {
				t.Fatalf("%s holds clear text: %s", rec.Type, rec.Data)
			}
		}
		if seen != 10 { // five keyed writes ran: a claim and a completion each
			t.Fatalf("%d idempotency events", seen)
		}
	})
}

// TestVerifyUseRetriedWithItsKeyConsumesOnce: a timed-out verify-use retried
// with its Idempotency-Key must not consume twice. Twenty
// concurrent retries with one key consume one use, and a retry after the
// duplicate-use cooldown still replays instead of consuming again.
func TestVerifyUseRetriedWithItsKeyConsumesOnce(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	p := harness.Start(t, node.Config{DataDir: t.TempDir(), Now: clock})
	station, partner, item := harness.BenefitSetup(t, p)
	card := partner.Issue(item, 10, now.Add(72*time.Hour).Format(time.RFC3339))
	verify := map[string]any{"card_number": card, "benefit_item_id": item, "points_code": "P-1"}

	answers := make([]harness.Response, 20)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = station.Keyed("POST", "/open/v1/benefit-cards/verify-use", verify, "use-1", clock())
		}()
	}
	wg.Wait()
	var replays atomic.Int64
	var original harness.Response
	for _, res := range answers {
		if res.Status != 200 || !bytes.Equal(res.Raw, answers[0].Raw) {
			t.Fatalf("answers differ: %d %s vs %s", res.Status, res.Raw, answers[0].Raw)
		}
		if res.Header.Get("Idempotent-Replayed") == "true" {
			replays.Add(1)
		} else {
			original = res
		}
	}
	if replays.Load() != 19 {
		t.Fatalf("%d replays", replays.Load())
	}
	remaining := func() int64 {
		var cd struct {
			Items []struct {
				Remaining int64 `json:"remaining_quantity"`
			} `json:"items"`
		}
		p.Send(partner.Request("GET", "/open/v1/benefit-cards/detail?card_number="+card, nil, clock())).Data(t, &cd)
		return cd.Items[0].Remaining
	}
	if r := remaining(); r != 9 {
		t.Fatalf("remaining %d after one keyed verification", r)
	}
	mu.Lock()
	now = now.Add(time.Minute) // past the duplicate-use cooldown
	mu.Unlock()
	harness.SameAnswer(t, "verify after the cooldown", original, station.Keyed("POST", "/open/v1/benefit-cards/verify-use", verify, "use-1", clock()))
	if r := remaining(); r != 9 {
		t.Fatalf("remaining %d after a retry past the cooldown", r)
	}
	// 24 h later the key is free again: a new use with it consumes.
	mu.Lock()
	now = now.Add(24 * time.Hour)
	mu.Unlock()
	if res := station.Keyed("POST", "/open/v1/benefit-cards/verify-use", verify, "use-1", clock()); res.Status != 200 || res.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("after 24 h: %d %s", res.Status, res.Raw)
	}
	if r := remaining(); r != 8 {
		t.Fatalf("remaining %d after the key expired and was used again", r)
	}
}

func TestIdempotencyKeySurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := harness.Start(t, node.Config{DataDir: dir})
	a := p.CreateApp("partner")
	first := a.Keyed("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), "reg-1", time.Now())
	if first.Status != http.StatusCreated {
		t.Fatalf("register: %d %s", first.Status, first.Raw)
	}
	n := p.EventCount()
	p.Stop()

	q := harness.Start(t, node.Config{DataDir: dir})
	b := &harness.App{P: q, ID: a.ID, Key: a.Key, Secret: a.Secret}
	harness.SameAnswer(t, "after restart", first, b.Keyed("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), "reg-1", time.Now()))
	if got := q.EventCount(); got != n {
		t.Fatalf("replay after restart appended %d events", got-n)
	}
	var reg harness.RegisterData
	first.Data(t, &reg)
	if s := b.Snapshot(fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)); s.User.OpenUserID != reg.OpenUserID {
		t.Fatalf("snapshot %+v", s)
	}
}
