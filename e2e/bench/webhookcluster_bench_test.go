package bench_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
)

// BenchmarkWebhookSendingNodes measures how fast 1 and 2 nodes on one
// Postgres event store and read models send a backlog of due deliveries
// (b.N of them, rounded up to even) to a loopback receiver that answers at
// once: the deliveries are created and fail once while untimed, then one
// step of the nodes' shared clock makes every retry due at once, and the
// timer runs until the receiver has taken them all. Compare nodes=2 to
// nodes=1 of the same run.
func BenchmarkWebhookSendingNodes(b *testing.B) {
	for _, nodes := range []int{1, 2} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) { benchSendingNodes(b, nodes) })
	}
}

func benchSendingNodes(b *testing.B, nodes int) {
	cfgs := harness.ClusterConfigs(b, nodes)
	clock := harness.NewFakeClock()
	ps := make([]*harness.Platform, nodes)
	for i, cfg := range cfgs {
		cfg.WebhookClock, cfg.WebhookSchedule, cfg.PartnerRateLimit = clock, []time.Duration{time.Hour}, -1
		ps[i] = harness.Start(b, cfg)
	}
	var ok, failed atomic.Int64
	var open atomic.Bool
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !open.Load() {
			failed.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		ok.Add(1)
	}))
	defer rcv.Close()
	a := ps[0].CreateApp("bench")
	ps[0].ConfigureWebhook(a, rcv.URL, "user.family_member.created")
	want := int64(b.N+1) / 2 * 2
	for i := range want / 2 {
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody(fmt.Sprint("b", i)), http.StatusCreated, "0")
	}
	waitCount(b, &failed, want, "first attempts")
	before := make([]int, nodes)
	for i, p := range ps {
		before[i] = harness.Attempts(b, p.Node)
	}
	// Every node's read model shows the retries before the clock moves.
	for _, p := range ps {
		if err := p.Node.ReadModelRunners["deliveries"].WaitFor(b.Context(), harness.Head(b, p)); err != nil {
			b.Fatal(err)
		}
	}
	open.Store(true)
	b.ResetTimer()
	began := time.Now()
	clock.Advance(time.Hour)
	waitCount(b, &ok, want, "retries")
	elapsed := time.Since(began)
	b.StopTimer()
	b.ReportMetric(float64(want)/elapsed.Seconds(), "deliveries/s")
	if nodes > 1 {
		for i, p := range ps {
			b.ReportMetric(float64(harness.Attempts(b, p.Node)-before[i])/float64(want), fmt.Sprintf("node%d-share", i))
		}
	}
}

// waitCount waits, within a bound, until c reaches n.
func waitCount(b *testing.B, c *atomic.Int64, n int64, what string) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for c.Load() < n {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d %s arrived", c.Load(), n, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
