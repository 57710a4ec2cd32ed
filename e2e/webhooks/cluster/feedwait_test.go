package cluster_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/projections"
)

// Two nodes on one Postgres event store and read-model store: a feed
// request waiting on the node that does not project the deliveries read
// model answers with an event written through the other node (which does),
// woken by the owner's announcement of its progress, long before its wait
// would have ended.
func TestFeedWaitOnOneNodeWakesOnAWriteThroughTheOther(t *testing.T) {
	t.Parallel()
	pa, pb := harness.TwoNodes(t, nil)
	// The waiting node is the one that learns of new deliveries from the
	// other; leases settle shortly after the start.
	owner, follower := pa, pb
	for deadline := time.Now().Add(harness.WaitBound); ; time.Sleep(50 * time.Millisecond) {
		ra := pa.Node.ReadModelRunners[projections.ReadModelDeliveries]
		rb := pb.Node.ReadModelRunners[projections.ReadModelDeliveries]
		if ra.Owning() != rb.Owning() {
			if rb.Owning() {
				owner, follower = pb, pa
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no node took the deliveries read model's lease")
		}
	}
	a := owner.CreateApp("cluster-long-poll")
	w := a.On(follower)

	const wait = 20
	req := w.Request("GET", fmt.Sprintf("/open/v1/webhooks/events?after=&wait=%d", wait), nil, time.Now())
	type answer struct {
		status  int
		body    []byte
		elapsed time.Duration
		err     error
	}
	done := make(chan answer, 1)
	go func() {
		began := time.Now()
		res, err := follower.Client.Do(req)
		if err != nil {
			done <- answer{err: err}
			return
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		done <- answer{status: res.StatusCode, body: b, elapsed: time.Since(began), err: err}
	}()
	time.Sleep(300 * time.Millisecond) // lets the request start waiting; were it late, the answer is the same
	a.Expect("POST", "/open/v1/webhooks/sandbox-events", map[string]any{"event": "order.shipped"}, http.StatusAccepted, "0")

	var got answer
	select {
	case got = <-done:
	case <-time.After(harness.WaitBound):
		t.Fatal("the waiting request did not answer")
	}
	if got.err != nil {
		t.Fatal(got.err)
	}
	var env struct {
		Data harness.FeedPage `json:"data"`
	}
	if err := json.Unmarshal(got.body, &env); err != nil || got.status != http.StatusOK {
		t.Fatalf("%d %s (%v)", got.status, got.body, err)
	}
	if len(env.Data.Events) != 1 || env.Data.Events[0].Event != "order.shipped" || env.Data.NextCursor != env.Data.Events[0].Cursor {
		t.Fatalf("the waiting request answered %s", got.body)
	}
	if got.elapsed >= wait*time.Second {
		t.Fatalf("answered only when the wait ended (%v): the other node's write did not wake it", got.elapsed)
	}
	t.Logf("woken after %v on the follower", got.elapsed)
}
