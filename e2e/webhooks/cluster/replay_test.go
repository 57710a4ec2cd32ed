package cluster_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
)

// A webhook replay runs on one node of a cluster at a time (the
// webhook-replays lease); when that node stops mid-replay, the other takes
// the lease and resumes from the replay's checkpoint: every event is
// delivered, under its original id, and no more than one window twice.
func TestReplayRunsOnOneNodeAndResumesOnTakeover(t *testing.T) {
	t.Parallel()
	cfgs := harness.ClusterConfigs(t, 2)
	leases := leaseStore(t, cfgs[0].PostgresURL)
	ps := make([]*harness.Platform, 2)
	for i := range ps {
		// A stop releases the replay's lease at once, so the takeover needs
		// no short TTL; a long one keeps a loaded machine's late renewal from
		// moving the lease (and repeating another window) before the stop.
		cfgs[i].LeaseTTL, cfgs[i].WebhookReplayRate, cfgs[i].WebhookReplayWindow = 10*time.Second, 30, 2
		ps[i] = startNamed(t, fmt.Sprint("node-", i), cfgs[i])
	}
	a := ps[0].CreateApp("cluster-replay")
	rcv := harness.NewReceiver(t)
	rcv.Secret = a.WebhookSecret
	ps[0].ConfigureWebhook(a, rcv.Srv.URL+"/hooks", "user.profile.updated")
	var reg harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("cr-1"), http.StatusCreated, "0").Data(t, &reg)
	const n = 16
	for i := range n {
		a.Expect("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID), map[string]any{"nickname": fmt.Sprint("c", i)}, http.StatusOK, "0")
	}
	live := rcv.WaitFor(n)
	original := map[string]bool{}
	for _, w := range live {
		original[w.ID] = true
	}
	rcv.Quiet(n, 300*time.Millisecond)

	type view struct {
		ReplayID           int64  `json:"replay_id"`
		Status             string `json:"status"`
		Matched, Delivered int64
		Queued             int64 `json:"queued"`
	}
	read := func(a *harness.App, id int64) view {
		var v view
		res := a.Expect("GET", fmt.Sprintf("/open/v1/webhooks/replays/%d", id), nil, http.StatusOK, "0")
		if err := json.Unmarshal(res.Env.Data, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	var v view
	res := a.DoH("POST", "/open/v1/webhooks/replays", map[string]any{"events": []string{"user.profile.updated"}, "since": "2020-01-01T00:00:00Z"})
	if res.Status != http.StatusAccepted {
		t.Fatalf("request replay: %d %s", res.Status, res.Raw)
	}
	res.Data(t, &v)
	owner := holderOf(t, leases, "webhook-replays", "node-0", "node-1")
	for deadline := time.Now().Add(harness.WaitBound); len(rcv.WaitFor(0)) < n+4; {
		if time.Now().After(deadline) {
			t.Fatal("the replay did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopped, other := ps[0], ps[1]
	if owner == "node-1" {
		stopped, other = ps[1], ps[0]
	}
	stopped.Stop()
	a.P = other
	holderOf(t, leases, "webhook-replays", map[string]string{"node-0": "node-1", "node-1": "node-0"}[owner])
	for deadline := time.Now().Add(harness.WaitBound); ; time.Sleep(20 * time.Millisecond) {
		if v = read(a, v.ReplayID); v.Status == "COMPLETED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replay never completed after the takeover: %+v", v)
		}
	}
	if v.Queued != n {
		t.Fatalf("replay %+v, want all %d events queued", v, n)
	}
	rcv.WaitFor(n + n)
	time.Sleep(300 * time.Millisecond) // a repeat of the window in flight at the stop arrives too
	got := rcv.WaitFor(0)[n:]
	seen := map[string]int{}
	for _, w := range got {
		if !w.Verified || !original[w.ID] {
			t.Fatalf("replayed %+v: want a verified original delivery", w)
		}
		seen[w.ID]++
	}
	if len(seen) != n || len(got)-n > cfgs[0].WebhookReplayWindow {
		t.Fatalf("%d replayed, %d distinct of %d: want each once, at most one window twice", len(got), len(seen), n)
	}
}
