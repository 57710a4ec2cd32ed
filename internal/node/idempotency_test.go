package node_test

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

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/webhooks"
)

// keyed sends a signed request with an Idempotency-Key, signed at now.
func (a *app) keyed(method, path string, body any, key string, now time.Time) response {
	a.p.t.Helper()
	req := a.request(method, path, body, now)
	req.Header.Set("Idempotency-Key", key)
	return a.p.send(req)
}

// sameAnswer fails unless retry is a replay of first, byte for byte.
func sameAnswer(t *testing.T, what string, first, retry response) {
	t.Helper()
	if retry.Status != first.Status || !bytes.Equal(retry.Raw, first.Raw) || retry.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("%s: retry %d %s (replayed %q)\nfirst %d %s", what, retry.Status, retry.Raw, retry.Header.Get("Idempotent-Replayed"), first.Status, first.Raw)
	}
	if first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("%s: the first answer says it was replayed", what)
	}
}

func TestIdempotencyKeysReplayPartnerWrites(t *testing.T) {
	t.Parallel()
	readModels(t, func(t *testing.T, cfg node.Config) {
		p := start(t, cfg)
		a := p.createApp("partner")
		now := time.Now()

		first := a.keyed("POST", "/open/v1/channel/users", registerBody("u-1"), "reg-u-1", now)
		if first.Status != http.StatusCreated {
			t.Fatalf("register: %d %s", first.Status, first.Raw)
		}
		var reg registerData
		first.data(t, &reg)
		n := p.eventCount()
		// Unkeyed, a repeat answers 200 created:false; keyed, it is the first answer again.
		sameAnswer(t, "register", first, a.keyed("POST", "/open/v1/channel/users", registerBody("u-1"), "reg-u-1", now))
		user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
		if s := a.snapshot(user); s.User.OpenUserID != reg.OpenUserID {
			t.Fatalf("snapshot after replay: %+v", s)
		}
		// The same key for another body is refused and does nothing.
		res := a.keyed("POST", "/open/v1/channel/users", registerBody("u-2"), "reg-u-1", now)
		if res.Status != 422 || res.code() != "IDEMPOTENCY_KEY_REUSED" {
			t.Fatalf("reused key: %d %s", res.Status, res.Raw)
		}
		if got := p.eventCount(); got != n {
			t.Fatalf("replay or refusal appended %d events", got-n)
		}

		// A member upsert and its delete: retries answer as the first time,
		// where unkeyed retries would say created:false and 404.
		member := map[string]any{"app_user_id": "son", "app_group_id": 10, "name": "李小雷", "relationship": "SON"}
		up := a.keyed("POST", user+"/family-members", member, "member-son", now)
		if up.Status != http.StatusCreated {
			t.Fatalf("upsert: %d %s", up.Status, up.Raw)
		}
		sameAnswer(t, "upsert", up, a.keyed("POST", user+"/family-members", member, "member-son", now))
		var m struct {
			MemberID int64 `json:"member_id"`
		}
		up.data(t, &m)
		del := a.keyed("DELETE", fmt.Sprintf("%s/family-members/%d", user, m.MemberID), nil, "del-son", now)
		if del.Status != http.StatusOK {
			t.Fatalf("delete: %d %s", del.Status, del.Raw)
		}
		n = p.eventCount()
		sameAnswer(t, "delete", del, a.keyed("DELETE", fmt.Sprintf("%s/family-members/%d", user, m.MemberID), nil, "del-son", now))
		a.expect("DELETE", fmt.Sprintf("%s/family-members/%d", user, m.MemberID), nil, 404, "FAMILY_MEMBER_NOT_FOUND")
		if got := p.eventCount(); got != n {
			t.Fatalf("the delete's replay and the unkeyed retry appended %d events", got-n)
		}
		// A key is the app's own: another app's identical key is another request.
		b := p.createApp("other")
		b.expect("GET", user, nil, 404, "USER_NOT_FOUND")
		if res := b.keyed("DELETE", fmt.Sprintf("%s/family-members/%d", user, m.MemberID), nil, "del-son", now); res.Status != 404 || res.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("other app's key: %d %s", res.Status, res.Raw)
		}

		// Bad keys and bad bodies are refused before the key is claimed: nothing appended.
		n = p.eventCount()
		for _, key := range []string{strings.Repeat("k", 256), "naïve", "tab\tkey"} {
			res := a.keyed("PATCH", user, map[string]any{"nickname": "x"}, key, now)
			if res.Status != 422 || res.code() != "VALIDATION_ERROR" || res.Env.Errors["Idempotency-Key"] == nil {
				t.Fatalf("key %q: %d %s", key, res.Status, res.Raw)
			}
		}
		if res := a.keyed("PATCH", user, map[string]any{"gender": 5}, "patch-1", now); res.Status != 422 || res.Env.Errors["gender"] == nil {
			t.Fatalf("bad body: %d %s", res.Status, res.Raw)
		}
		if got := p.eventCount(); got != n {
			t.Fatalf("bad input appended %d events", got-n)
		}
		// The key a bad body was sent with is still free for the corrected body.
		a.keyed("PATCH", user, map[string]any{"nickname": "fixed"}, "patch-1", now)
		if s := a.snapshot(user); s.User.Nickname == nil || *s.User.Nickname != "fixed" {
			t.Fatalf("patch after bad body: %+v", s.User)
		}

		// Idempotency records are bookkeeping: no webhook, no projection.
		recs, err := p.node.Events.ReadAll(context.Background(), events.Position{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, rec := range recs {
			if !strings.HasPrefix(rec.Stream, "idempotency-") {
				continue
			}
			seen++
			env, err := p.node.Registry.Decode(rec)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := webhooks.Render(env, p.node.Location); ok {
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
	p := start(t, node.Config{DataDir: t.TempDir(), Now: clock})
	station, partner, item := benefitSetup(t, p)
	card := partner.issue(item, 10, now.Add(72*time.Hour).Format(time.RFC3339))
	verify := map[string]any{"card_number": card, "benefit_item_id": item, "points_code": "P-1"}

	answers := make([]response, 20)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = station.keyed("POST", "/open/v1/benefit-cards/verify-use", verify, "use-1", clock())
		}()
	}
	wg.Wait()
	var replays atomic.Int64
	var original response
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
		p.send(partner.request("GET", "/open/v1/benefit-cards/detail?card_number="+card, nil, clock())).data(t, &cd)
		return cd.Items[0].Remaining
	}
	if r := remaining(); r != 9 {
		t.Fatalf("remaining %d after one keyed verification", r)
	}
	mu.Lock()
	now = now.Add(time.Minute) // past the duplicate-use cooldown
	mu.Unlock()
	sameAnswer(t, "verify after the cooldown", original, station.keyed("POST", "/open/v1/benefit-cards/verify-use", verify, "use-1", clock()))
	if r := remaining(); r != 9 {
		t.Fatalf("remaining %d after a retry past the cooldown", r)
	}
	// 24 h later the key is free again: a new use with it consumes.
	mu.Lock()
	now = now.Add(24 * time.Hour)
	mu.Unlock()
	if res := station.keyed("POST", "/open/v1/benefit-cards/verify-use", verify, "use-1", clock()); res.Status != 200 || res.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("after 24 h: %d %s", res.Status, res.Raw)
	}
	if r := remaining(); r != 8 {
		t.Fatalf("remaining %d after the key expired and was used again", r)
	}
}

func TestIdempotencyKeySurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := start(t, node.Config{DataDir: dir})
	a := p.createApp("partner")
	first := a.keyed("POST", "/open/v1/channel/users", registerBody("u-1"), "reg-1", time.Now())
	if first.Status != http.StatusCreated {
		t.Fatalf("register: %d %s", first.Status, first.Raw)
	}
	n := p.eventCount()
	p.stop()

	q := start(t, node.Config{DataDir: dir})
	b := &app{p: q, ID: a.ID, Key: a.Key, Secret: a.Secret}
	sameAnswer(t, "after restart", first, b.keyed("POST", "/open/v1/channel/users", registerBody("u-1"), "reg-1", time.Now()))
	if got := q.eventCount(); got != n {
		t.Fatalf("replay after restart appended %d events", got-n)
	}
	var reg registerData
	first.data(t, &reg)
	if s := b.snapshot(fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)); s.User.OpenUserID != reg.OpenUserID {
		t.Fatalf("snapshot %+v", s)
	}
}
