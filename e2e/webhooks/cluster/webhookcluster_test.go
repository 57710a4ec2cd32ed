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

// sentAttempts records each webhook POST where its sender makes it (every
// node's transport is wrapped), by X-Webhook-Id: one process runs the three
// nodes, so their times are on one monotonic clock, and a node that takes a
// delivery after another released it records its start after the other
// recorded its end, however loaded the machine. The receiver cannot tell
// that: it notices a hang-up only when its goroutine next runs.
type sentAttempts struct {
	mu   sync.Mutex
	byID map[string][]sentAttempt
}

// sentAttempt is one POST: start is when its node handed it to the
// transport, end when the node was done with it: the round trip failed, or
// the response's body was closed, or the request's deadline passed, if that
// came first (past it the transport has cut the POST off, whenever the
// node's goroutine gets to return).
type sentAttempt struct {
	node       int
	start, end time.Time
}

// wrap is node's node.Config.WebhookTransport.
func (s *sentAttempts) wrap(node int) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			a := sentAttempt{node: node, start: time.Now()}
			res, err := next.RoundTrip(req)
			if err != nil {
				s.ended(req, a)
				return nil, err
			}
			res.Body = &closeHook{ReadCloser: res.Body, closed: func() { s.ended(req, a) }}
			return res, nil
		})
	}
}

func (s *sentAttempts) ended(req *http.Request, a sentAttempt) {
	a.end = time.Now()
	if d, ok := req.Context().Deadline(); ok && d.Before(a.end) {
		a.end = d
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := req.Header.Get("X-Webhook-Id")
	s.byID[id] = append(s.byID[id], a)
}

// waitRecorded waits, within a bound, until the senders recorded at least
// as many attempts of each delivery as the receiver saw.
func (s *sentAttempts) waitRecorded(t *testing.T, seen map[string][]hookRequest) {
	t.Helper()
	deadline := time.Now().Add(harness.WaitBound)
	for {
		s.mu.Lock()
		missing := ""
		for id, reqs := range seen {
			if len(s.byID[id]) < len(reqs) {
				missing = fmt.Sprintf("delivery %s: the senders recorded %d attempts, the receiver saw %d", id, len(s.byID[id]), len(reqs))
				break
			}
		}
		s.mu.Unlock()
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(missing)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// closeHook calls closed once, when the body is first closed.
type closeHook struct {
	io.ReadCloser
	once   sync.Once
	closed func()
}

func (c *closeHook) Close() error {
	err := c.ReadCloser.Close()
	c.once.Do(c.closed)
	return err
}

// clusterClaimTTL is the claims' lifetime in the webhook cluster test.
const clusterClaimTTL = 1500 * time.Millisecond

// TestWebhookSendingSpreadsOverNodesWithoutOverlap runs three nodes on one
// Postgres event store and read models, with no Kafka: every delivery
// reaches the receiver with a stable id and the same bytes on every
// attempt, no two attempts of one delivery are ever open at once (not even
// when a receiver answers slower than a claim lasts), and every node sends
// a share. Overlap is judged by the senders' own records (sentAttempts).
func TestWebhookSendingSpreadsOverNodesWithoutOverlap(t *testing.T) {
	t.Parallel()
	const nodes, registers = 3, 24
	cfgs := harness.ClusterConfigs(t, nodes)
	ps := make([]*harness.Platform, nodes)
	sent := &sentAttempts{byID: map[string][]sentAttempt{}}
	for i, cfg := range cfgs {
		cfg.WebhookTransport = sent.wrap(i)
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
		for i, r := range reqs {
			if r.body != reqs[0].body {
				t.Errorf("delivery %s: attempt %d carried other bytes than the first:\n%s\n%s", id, i+1, r.body, reqs[0].body)
			}
			if r.status == 0 {
				cut++
			}
		}
		if len(reqs) < 2 {
			t.Errorf("delivery %s: %d attempts, want the failed first and a retry", id, len(reqs))
		}
	}
	// Every POST the receiver saw ends at its sender too (a 200 once its
	// answer is read, which may be after the receiver recorded it).
	sent.waitRecorded(t, rcv.requests)
	sent.mu.Lock()
	defer sent.mu.Unlock()
	for id := range rcv.requests {
		atts := sent.byID[id]
		slices.SortFunc(atts, func(x, y sentAttempt) int { return x.start.Compare(y.start) })
		for i := 1; i < len(atts); i++ {
			if prev, a := atts[i-1], atts[i]; a.start.Before(prev.end) {
				t.Errorf("delivery %s: node %d started attempt %d at %s while node %d's attempt %d was open until %s",
					id, a.node, i+1, a.start.Format("15:04:05.000"), prev.node, i, prev.end.Format("15:04:05.000"))
			}
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
