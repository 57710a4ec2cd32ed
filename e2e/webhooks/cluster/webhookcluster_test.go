package cluster_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/webhooks"
)

// slowReceiver records, per X-Webhook-Id, when each request started and
// ended and what it carried. Each delivery's first request is answered
// slowly with a 500 (so it is retried while every node sees it due); the
// first requests of every fifth delivery are slower than a sender may keep
// a POST open under its claim, so it is cut off; later ones succeed.
type slowReceiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests map[string][]hookRequest
	done     map[string]bool
	changed  chan struct{}
}

// closedBy is when an attempt was certainly over. A POST the sender cut off
// ends at its budget after its claim, which precedes the receiver's start;
// the receiver itself may notice the hang-up later on a loaded machine, so
// its own end time is only an upper bound.
func closedBy(r hookRequest) time.Time {
	if r.status == 0 {
		if cut := r.start.Add(webhooks.AttemptBudget(clusterClaimTTL)); cut.Before(r.end) {
			return cut
		}
	}
	return r.end
}

type hookRequest struct {
	start, end time.Time
	body       string
	status     int
}

func newSlowReceiver(t *testing.T, cutOff func(id string) bool) *slowReceiver {
	r := &slowReceiver{requests: map[string][]hookRequest{}, done: map[string]bool{}, changed: make(chan struct{}, 1)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		id := req.Header.Get("X-Webhook-Id")
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		n := len(r.requests[id])
		r.mu.Unlock()
		wait, status := 20*time.Millisecond, http.StatusOK
		switch {
		case n == 0 && cutOff(id):
			wait, status = 5*time.Second, http.StatusOK // the sender hangs up first
		case n == 0:
			wait, status = 150*time.Millisecond, http.StatusInternalServerError
		}
		select {
		case <-time.After(wait):
			w.WriteHeader(status)
		case <-req.Context().Done():
			status = 0 // the sender hung up
		}
		r.mu.Lock()
		r.requests[id] = append(r.requests[id], hookRequest{start: start, end: time.Now(), body: string(body), status: status})
		if status == http.StatusOK {
			r.done[id] = true
		}
		r.mu.Unlock()
		select {
		case r.changed <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// waitDone waits, within a bound, until n deliveries were answered 200.
func (r *slowReceiver) waitDone(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(90 * time.Second)
	for {
		r.mu.Lock()
		got := len(r.done)
		r.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-r.changed:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%d of %d deliveries reached the receiver", got, n)
		}
	}
}

// clusterClaimTTL is the claims' lifetime in the webhook cluster test.
const clusterClaimTTL = 1500 * time.Millisecond

// TestWebhookSendingSpreadsOverNodesWithoutOverlap runs three nodes on one
// Postgres event store and read models, with no Kafka: every delivery
// reaches the receiver with a stable id and the same bytes on every
// attempt, no two attempts of one delivery are ever open at once (not even
// when a receiver answers slower than a claim lasts), and every node sends
// a share.
func TestWebhookSendingSpreadsOverNodesWithoutOverlap(t *testing.T) {
	t.Parallel()
	const nodes, registers = 3, 24
	cfgs := harness.ClusterConfigs(t, nodes)
	ps := make([]*harness.Platform, nodes)
	for i, cfg := range cfgs {
		cfg.WebhookSchedule = []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond}
		cfg.WebhookWorkers = 4
		// Claims lapse after 1.5 s, so a POST is cut off after 1 s: the
		// receiver's 5 s answers test that no claim lapses under an open POST.
		cfg.WebhookClaimTTL = clusterClaimTTL
		// Every delivery's first attempt fails here by design, so with the
		// default breaker the endpoint would open for 30 s (and double when
		// a probe is a first attempt): this test is about claims, not
		// breakers (webhookbreaker_test.go tests those).
		cfg.WebhookBreakerFailures = 1000
		ps[i] = harness.Start(t, cfg)
	}
	rcv := newSlowReceiver(t, func(id string) bool {
		// Which deliveries are slow does not matter, only that some are.
		return len(id) > 0 && id[len(id)-1]%5 == 0
	})
	a := ps[0].CreateApp("partner")
	ps[0].ConfigureWebhook(a, rcv.srv.URL+"/hooks", "user.family_member.created")
	for i := range registers {
		a.P = ps[i%nodes]
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody(fmt.Sprint("cluster-", i)), http.StatusCreated, "0")
	}
	want := 2 * registers // two family members each
	rcv.waitDone(t, want)

	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.requests) != want {
		t.Fatalf("receiver saw %d delivery ids, want %d", len(rcv.requests), want)
	}
	cut := 0
	for id, reqs := range rcv.requests {
		slices.SortFunc(reqs, func(x, y hookRequest) int { return x.start.Compare(y.start) })
		for i, r := range reqs {
			if r.body != reqs[0].body {
				t.Errorf("delivery %s: attempt %d carried other bytes than the first:\n%s\n%s", id, i+1, r.body, reqs[0].body)
			}
			if i > 0 && r.start.Before(closedBy(reqs[i-1])) {
				t.Errorf("delivery %s: attempt %d started at %s before attempt %d ended at %s",
					id, i+1, r.start.Format("15:04:05.000"), i, closedBy(reqs[i-1]).Format("15:04:05.000"))
			}
			if r.status == 0 {
				cut++
			}
		}
		if len(reqs) < 2 {
			t.Errorf("delivery %s: %d attempts, want the failed first and a retry", id, len(reqs))
		}
	}
	if cut == 0 {
		t.Fatalf("no POST was cut off at its claim's budget; the slow receiver did not test it")
	}
	for i, p := range ps {
		if harness.Attempts(t, p.Node) == 0 {
			t.Errorf("node %d sent nothing: the due work was not spread", i)
		}
	}
}
