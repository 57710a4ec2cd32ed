package webhooks_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// replayView is a replay as the partner reads it.
type replayView struct {
	ReplayID      int64    `json:"replay_id"`
	EndpointID    int64    `json:"endpoint_id"`
	Events        []string `json:"events"`
	Status        string   `json:"status"`
	Matched       int64    `json:"matched"`
	Queued        int64    `json:"queued"`
	Delivered     int64    `json:"delivered"`
	Erased        int64    `json:"erased"`
	CursorReached string   `json:"cursor_reached"`
	EndCursor     string   `json:"end_cursor"`
}

// requestReplay asks for a replay by scheme H, as partner writes are signed.
func requestReplay(t *testing.T, a *harness.App, body map[string]any) replayView {
	t.Helper()
	res := a.DoH("POST", "/open/v1/webhooks/replays", body)
	if res.Status != http.StatusAccepted {
		t.Fatalf("request replay: %d %s", res.Status, res.Raw)
	}
	var v replayView
	res.Data(t, &v)
	return v
}

func getReplay(t *testing.T, a *harness.App, id int64) replayView {
	t.Helper()
	var v replayView
	a.Expect("GET", fmt.Sprintf("/open/v1/webhooks/replays/%d", id), nil, http.StatusOK, "0").Data(t, &v)
	return v
}

// waitReplay polls the replay until ok holds (bounded).
func waitReplay(t *testing.T, a *harness.App, id int64, ok func(replayView) bool) replayView {
	t.Helper()
	deadline := time.Now().Add(harness.WaitBound)
	var v replayView
	for time.Now().Before(deadline) {
		if v = getReplay(t, a, id); ok(v) {
			return v
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("replay %d never reached the awaited state: %+v", id, v)
	return v
}

// nicknames makes every profile update a change.
var nicknames atomic.Int64

func patchProfiles(t *testing.T, a *harness.App, user int64, n int) {
	t.Helper()
	for range n {
		a.Expect("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", user), map[string]any{"nickname": fmt.Sprintf("n%d", nicknames.Add(1))}, http.StatusOK, "0")
	}
}

// A replay since a time delivers again exactly the app's events of the
// chosen types that occurred since then, under their original delivery
// ids, signed with the endpoint's secret; an auditor sees its request and
// its completion.
func TestReplaySinceTimeDeliversOriginalIDs(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		cfg.WebhookAllowLoopback = true
		p := harness.Start(t, cfg)
		a := p.CreateApp("replayer")
		other := p.CreateApp("bystander")
		rcv := harness.NewReceiver(t)
		rcv.Secret = a.WebhookSecret
		p.ConfigureWebhook(a, rcv.Srv.URL+"/hooks", "user.profile.updated", "user.family_member.created")
		p.ConfigureWebhook(other, harness.NewReceiver(t).Srv.URL+"/other")

		var early harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("early"), http.StatusCreated, "0").Data(t, &early)
		patchProfiles(t, a, early.OpenUserID, 1)
		rcv.WaitFor(3) // two members created, one profile update
		since := time.Now()
		time.Sleep(5 * time.Millisecond) // the next events occur strictly after since
		var late harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("late"), http.StatusCreated, "0").Data(t, &late)
		patchProfiles(t, a, late.OpenUserID, 2)
		patchProfiles(t, a, early.OpenUserID, 1)
		other.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("theirs"), http.StatusCreated, "0")
		live := rcv.WaitFor(3 + 5)
		var wantIDs []string
		for _, w := range live[3:] {
			if w.Event == "user.profile.updated" {
				wantIDs = append(wantIDs, w.ID)
			}
		}
		if len(wantIDs) != 3 {
			t.Fatalf("live profile updates since %v: %d, want 3", since, len(wantIDs))
		}
		rcv.Quiet(len(live), 200*time.Millisecond)

		v := requestReplay(t, a, map[string]any{"events": []string{"user.profile.updated"}, "since": since.Format(time.RFC3339Nano)})
		if v.Status != "RUNNING" || v.EndpointID != 0 || v.ReplayID <= 0 {
			t.Fatalf("replay answered %+v", v)
		}
		done := waitReplay(t, a, v.ReplayID, func(v replayView) bool { return v.Status == "COMPLETED" })
		if done.Matched != 3 || done.Queued != 3 || done.Delivered != 3 || done.Erased != 0 || done.CursorReached != done.EndCursor {
			t.Fatalf("completed replay %+v, want 3 matched, queued and delivered up to its end", done)
		}
		got := rcv.WaitFor(len(live) + 3)[len(live):]
		rcv.Quiet(len(live)+3, 200*time.Millisecond)
		var gotIDs []string
		for _, w := range got {
			if !w.Verified || w.Event != "user.profile.updated" {
				t.Fatalf("replayed webhook %+v: want a verified user.profile.updated", w)
			}
			var body harness.UserWebhook
			if err := json.Unmarshal(w.Body, &body); err != nil || body.DeliveryID != w.ID || body.AppID != a.ID {
				t.Fatalf("replayed body %s (%v) does not match its id %s", w.Body, err, w.ID)
			}
			gotIDs = append(gotIDs, w.ID)
		}
		// Several POSTs to one endpoint run at once, so arrival order is not
		// log order, for live deliveries and replayed ones alike.
		slices.Sort(gotIDs)
		slices.Sort(wantIDs)
		if fmt.Sprint(gotIDs) != fmt.Sprint(wantIDs) {
			t.Fatalf("replayed ids %v, want the original ones %v", gotIDs, wantIDs)
		}
		for _, w := range live[3:] {
			if w.Event == "user.profile.updated" && !slices.ContainsFunc(got, func(g harness.Webhook) bool { return string(g.Body) == string(w.Body) }) {
				t.Fatalf("replayed bodies differ from the original %s", w.Body)
			}
		}

		// An auditor sees the request and the completion.
		var audit struct {
			Facts []struct {
				Action string `json:"action"`
				AppID  int64  `json:"app_id"`
				Actor  string `json:"actor"`
			} `json:"facts"`
		}
		deadline := time.Now().Add(harness.WaitBound)
		for {
			audit.Facts = nil
			p.AdminOK("GET", fmt.Sprintf("/admin/v1/audit?subject=webhookreplay-%d", v.ReplayID), nil, http.StatusOK).Data(t, &audit)
			var actions []string
			for _, f := range audit.Facts {
				if strings.HasPrefix(f.Action, "webhook.replay_") && f.AppID == a.ID {
					actions = append(actions, f.Action+" by "+f.Actor)
				}
			}
			slices.Sort(actions)
			want := []string{"webhook.replay_completed by replay:webhooks", fmt.Sprintf("webhook.replay_requested by app:%d", a.ID)}
			if fmt.Sprint(actions) == fmt.Sprint(want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("audit facts %v, want %v", actions, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// A replay from a feed cursor delivers the events whose feed entries come
// after it; from the beginning of the log it delivers them all.
func TestReplayFromCursorAndFromTheStart(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		cfg.WebhookAllowLoopback = true
		p := harness.Start(t, cfg)
		a := p.CreateApp("cursor")
		rcv := harness.NewReceiver(t)
		rcv.Secret = a.WebhookSecret
		p.ConfigureWebhook(a, rcv.Srv.URL+"/hooks", "user.profile.updated")
		var reg harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("c-1"), http.StatusCreated, "0").Data(t, &reg)
		patchProfiles(t, a, reg.OpenUserID, 4)
		live := rcv.WaitFor(4)
		// The cursor of the second update in the log's order (deliveries
		// may arrive in another order): the replay sends the two after it.
		feed := a.FeedPage("", 100)
		var updates []string
		var cursor string
		for _, e := range feed.Events {
			if e.Event != "user.profile.updated" {
				continue
			}
			updates = append(updates, e.DeliveryID)
			if len(updates) == 2 {
				cursor = e.Cursor
			}
		}
		liveIDs := []string{live[0].ID, live[1].ID, live[2].ID, live[3].ID}
		slices.Sort(liveIDs)
		if len(updates) != 4 || fmt.Sprint(liveIDs) != fmt.Sprint(slices.Sorted(slices.Values(updates))) {
			t.Fatalf("feed %+v: want the four updates delivered live %v", feed, liveIDs)
		}
		after := slices.Clone(updates[2:])
		v := requestReplay(t, a, map[string]any{"events": []string{"user.profile.updated"}, "cursor": cursor})
		waitReplay(t, a, v.ReplayID, func(v replayView) bool { return v.Status == "COMPLETED" })
		got := rcv.WaitFor(6)[4:]
		ids := []string{got[0].ID, got[1].ID}
		slices.Sort(ids)
		slices.Sort(after)
		if fmt.Sprint(ids) != fmt.Sprint(after) {
			t.Fatalf("replayed after the cursor %v, want %v", ids, after)
		}

		all := requestReplay(t, a, map[string]any{"events": []string{"*"}, "since": "1970-01-01T00:00:00Z"})
		done := waitReplay(t, a, all.ReplayID, func(v replayView) bool { return v.Status == "COMPLETED" })
		// Every event of the app since the log began: the family group, two
		// members and four updates, each to the default endpoint (which
		// now takes every type the replay names).
		if done.Matched != 7 || done.Queued != 7 {
			t.Fatalf("replay from the start %+v, want 7 events", done)
		}
		rcv.WaitFor(6 + 7)
	})
}

// A canceled replay queues nothing more; a restarted node resumes a replay
// from its checkpoint and delivers the rest, under the same ids.
func TestReplayCancelAndResumeAfterRestart(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		cfg.WebhookAllowLoopback = true
		cfg.WebhookReplayRate, cfg.WebhookReplayWindow = 40, 2
		p := harness.Start(t, cfg)
		a := p.CreateApp("slow")
		rcv := harness.NewReceiver(t)
		rcv.Secret = a.WebhookSecret
		p.ConfigureWebhook(a, rcv.Srv.URL+"/hooks", "user.profile.updated")
		var reg harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("s-1"), http.StatusCreated, "0").Data(t, &reg)
		const n = 24
		patchProfiles(t, a, reg.OpenUserID, n)
		live := rcv.WaitFor(n)
		liveIDs := map[string]bool{}
		for _, w := range live {
			liveIDs[w.ID] = true
		}
		body := map[string]any{"events": []string{"user.profile.updated"}, "since": "2020-01-01T00:00:00Z"}

		// Cancel: what was queued is sent, nothing more is queued.
		c := requestReplay(t, a, body)
		waitReplay(t, a, c.ReplayID, func(v replayView) bool { return v.Delivered >= 2 })
		var canceled replayView
		a.Expect("POST", fmt.Sprintf("/open/v1/webhooks/replays/%d/cancel", c.ReplayID), nil, http.StatusOK, "0").Data(t, &canceled)
		if canceled.Status != "CANCELED" {
			t.Fatalf("canceled replay %+v", canceled)
		}
		a.Expect("POST", fmt.Sprintf("/open/v1/webhooks/replays/%d/cancel", c.ReplayID), nil, http.StatusOK, "0")
		time.Sleep(300 * time.Millisecond) // at the replay's rate, several more windows would have been queued
		after := getReplay(t, a, c.ReplayID)
		if after.Status != "CANCELED" || after.Queued != canceled.Queued {
			t.Fatalf("after the cancel %+v (at the cancel %+v): the replay went on", after, canceled)
		}
		// What was queued is still sent: the counted deliveries, and at most
		// the window the runner was queuing when the cancel landed.
		rcv.WaitFor(n + int(after.Queued))
		// The window in flight at the cancel may land a little later on a
		// loaded machine: count once no delivery came for 300 ms (bounded).
		base := len(rcv.WaitFor(0))
		for range 50 {
			time.Sleep(300 * time.Millisecond)
			now := len(rcv.WaitFor(0))
			if now == base {
				break
			}
			base = now
		}
		if sent := base - n; sent < int(after.Queued) || sent > int(after.Queued)+cfg.WebhookReplayWindow || sent >= n {
			t.Fatalf("%d replayed deliveries after a cancel with %d queued: want no more than one window beyond", sent, after.Queued)
		}
		rcv.Quiet(base, 300*time.Millisecond)

		// Restart mid-replay: the next node resumes from the checkpoint.
		r := requestReplay(t, a, body)
		mid := waitReplay(t, a, r.ReplayID, func(v replayView) bool { return v.Delivered >= 4 })
		if mid.Status != "RUNNING" {
			t.Fatalf("replay finished before the restart: %+v", mid)
		}
		p.Stop()
		p = harness.Start(t, cfg)
		a = a.On(p)
		done := waitReplay(t, a, r.ReplayID, func(v replayView) bool { return v.Status == "COMPLETED" })
		if done.Matched != n || done.Queued != n {
			t.Fatalf("resumed replay %+v, want all %d events", done, n)
		}
		got := rcv.WaitFor(base + n)[base:]
		seen := map[string]int{}
		for _, w := range got {
			if !w.Verified || !liveIDs[w.ID] {
				t.Fatalf("resumed replay sent %+v: want a verified original delivery", w)
			}
			seen[w.ID]++
		}
		if len(seen) != n {
			t.Fatalf("resumed replay delivered %d distinct ids, want %d", len(seen), n)
		}
		// At least once: a restart may send again at most the window that
		// was in flight, under the same ids.
		if extra := len(got) - n; extra > cfg.WebhookReplayWindow {
			t.Fatalf("%d duplicates after the restart, want at most one window (%d)", extra, cfg.WebhookReplayWindow)
		}
	})
}

// An erased person's events are not delivered again: the replay counts
// them as erased and no replayed body carries their data.
func TestReplayLeavesErasedPeopleErased(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		cfg.WebhookAllowLoopback = true
		p := harness.Start(t, cfg)
		a := p.CreateApp("erasing")
		rcv := harness.NewReceiver(t)
		rcv.Secret = a.WebhookSecret
		p.ConfigureWebhook(a, rcv.Srv.URL+"/hooks", "user.profile.updated")
		var gone, kept harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("gone-person@example.com"), http.StatusCreated, "0").Data(t, &gone)
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("kept-person"), http.StatusCreated, "0").Data(t, &kept)
		patchProfiles(t, a, gone.OpenUserID, 2)
		patchProfiles(t, a, kept.OpenUserID, 1)
		rcv.WaitFor(3)
		if res := p.Admin("POST", fmt.Sprintf("/admin/v1/channel-users/%d/erase", gone.OpenUserID), map[string]any{"reason": "asked"}); res.Status != http.StatusOK {
			t.Fatalf("erase: %d %s", res.Status, res.Raw)
		}
		v := requestReplay(t, a, map[string]any{"events": []string{"user.*"}, "since": "2020-01-01T00:00:00Z"})
		done := waitReplay(t, a, v.ReplayID, func(v replayView) bool { return v.Status == "COMPLETED" })
		// The kept person's one update; every event of the erased person
		// (two updates, a family group and two members each not
		// subscribed live but named now) passed over.
		got := rcv.WaitFor(3 + int(done.Queued))[3:]
		rcv.Quiet(3+int(done.Queued), 300*time.Millisecond)
		if done.Erased == 0 || done.Queued+done.Erased != done.Matched {
			t.Fatalf("replay %+v: want the erased person's events counted as erased", done)
		}
		// The erasure's own notice (user.erased) is part of the history
		// and may be sent again: it names the person by the open_user_id
		// the app already had, and nothing personal.
		for _, w := range got {
			names := strings.Contains(string(w.Body), fmt.Sprintf(`"open_user_id":%d,`, gone.OpenUserID)) && w.Event != "user.erased"
			if strings.Contains(string(w.Body), "gone-person") || names {
				t.Fatalf("replayed webhook carries the erased person: %s", w.Body)
			}
		}
	})
}

// Bad input is refused with the spec's codes and records nothing; another
// app's replay or endpoint is not found, as a missing one.
func TestReplayBadInputAndTenancy(t *testing.T) {
	t.Parallel()
	cfg := node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true}
	p := harness.Start(t, cfg)
	a := p.CreateApp("mine")
	b := p.CreateApp("theirs")
	rcv := harness.NewReceiver(t)
	p.ConfigureWebhook(a, rcv.Srv.URL+"/a")
	p.ConfigureWebhook(b, rcv.Srv.URL+"/b")
	future := time.Now().Add(time.Hour).Format(time.RFC3339)
	ok := map[string]any{"events": []string{"user.profile.updated"}, "since": "2020-01-01T00:00:00Z"}
	with := func(k string, v any) map[string]any {
		out := map[string]any{}
		for kk, vv := range ok {
			out[kk] = vv
		}
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
		return out
	}
	before := p.EventCount()
	for name, c := range map[string]struct {
		body   any
		status int
		code   string
		field  string
	}{
		"unknown type":     {with("events", []string{"user.nope"}), 422, "VALIDATION_ERROR", "events[0]"},
		"no types":         {with("events", nil), 422, "VALIDATION_ERROR", "events"},
		"future since":     {with("since", future), 422, "VALIDATION_ERROR", "since"},
		"future until":     {with("until", future), 422, "VALIDATION_ERROR", "until"},
		"both starts":      {with("cursor", "3-3"), 422, "VALIDATION_ERROR", "since"},
		"neither start":    {with("since", nil), 422, "VALIDATION_ERROR", "since"},
		"bad cursor":       {map[string]any{"events": []string{"*"}, "cursor": "yesterday"}, 422, "VALIDATION_ERROR", "cursor"},
		"since not time":   {with("since", 7), 422, "VALIDATION_ERROR", "since"},
		"missing endpoint": {with("endpoint_id", 999999), 404, "WEBHOOK_ENDPOINT_NOT_FOUND", ""},
		"not an object":    {"[1]", 400, "HTTP_400", ""},
	} {
		res := a.DoH("POST", "/open/v1/webhooks/replays", c.body)
		if res.Status != c.status || res.Code() != c.code || (c.field != "" && len(res.Env.Errors[c.field]) == 0) {
			t.Errorf("%s: %d %s, want %d %s on %q", name, res.Status, res.Raw, c.status, c.code, c.field)
		}
	}
	if after := p.EventCount(); after != before {
		t.Fatalf("bad input appended %d events", after-before)
	}
	theirs := requestReplay(t, b, ok)
	a.Expect("GET", fmt.Sprintf("/open/v1/webhooks/replays/%d", theirs.ReplayID), nil, http.StatusNotFound, "REPLAY_NOT_FOUND")
	a.Expect("GET", "/open/v1/webhooks/replays/987654", nil, http.StatusNotFound, "REPLAY_NOT_FOUND")
	a.Expect("POST", fmt.Sprintf("/open/v1/webhooks/replays/%d/cancel", theirs.ReplayID), nil, http.StatusNotFound, "REPLAY_NOT_FOUND")
	done := waitReplay(t, b, theirs.ReplayID, func(v replayView) bool { return v.Status == "COMPLETED" })
	b.Expect("POST", fmt.Sprintf("/open/v1/webhooks/replays/%d/cancel", done.ReplayID), nil, http.StatusConflict, "REPLAY_FINISHED")
}

// Live deliveries keep their priority: a replay never has more than its
// window of deliveries waiting in the queue (each window is attempted
// before the next is queued), so a live delivery created during a large
// replay waits behind at most that window and arrives before the replay
// ends.
func TestReplayLeavesLiveTrafficFirst(t *testing.T) {
	t.Parallel()
	cfg := node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true, WebhookReplayWindow: 3, WebhookReplayRate: 200}
	p := harness.Start(t, cfg)
	a := p.CreateApp("busy")
	rcv := harness.NewReceiver(t)
	rcv.Secret = a.WebhookSecret
	p.ConfigureWebhook(a, rcv.Srv.URL+"/hooks", "user.profile.updated")
	var reg harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("b-1"), http.StatusCreated, "0").Data(t, &reg)
	const n = 60
	patchProfiles(t, a, reg.OpenUserID, n)
	rcv.WaitFor(n)

	var mu sync.Mutex
	queued := 0
	worst := 0
	p.Node.Replayer.OnQueued = func(_ int64, _ string) {
		mu.Lock()
		defer mu.Unlock()
		queued++
		// Deliveries queued by the replay and not yet received.
		if waiting := n + queued - len(rcv.WaitFor(0)); waiting > worst {
			worst = waiting
		}
	}
	v := requestReplay(t, a, map[string]any{"events": []string{"user.profile.updated"}, "since": "2020-01-01T00:00:00Z"})
	waitReplay(t, a, v.ReplayID, func(v replayView) bool { return v.Queued >= 6 })
	ackedAt := len(rcv.WaitFor(0))
	patchProfiles(t, a, reg.OpenUserID, 1) // live, mid-replay
	done := waitReplay(t, a, v.ReplayID, func(v replayView) bool { return v.Status == "COMPLETED" })
	all := rcv.WaitFor(n + n + 1)
	liveAt := -1
	for i, w := range all[n:] {
		if !slices.ContainsFunc(all[:n], func(o harness.Webhook) bool { return o.ID == w.ID }) {
			liveAt = i
		}
	}
	// What the live event waited behind (logged: it depends on how fast
	// the creation follows the write): the replayed deliveries that arrived
	// between its write's answer and its own delivery.
	t.Logf("live delivery: %d replayed deliveries arrived between its write and it (window %d, %d replayed in all)",
		n+liveAt-ackedAt, cfg.WebhookReplayWindow, n)
	mu.Lock()
	defer mu.Unlock()
	if worst > cfg.WebhookReplayWindow {
		t.Fatalf("up to %d replay deliveries waited at once, want at most the window (%d)", worst, cfg.WebhookReplayWindow)
	}
	if liveAt < 0 || liveAt == n || done.Delivered != n {
		t.Fatalf("live delivery at %d of %d replayed (replay %+v): want it before the replay's end", liveAt, n, done)
	}
}
