package bench_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// BenchmarkBulkResend: an operator resends an app's backlog of 4,000
// deliveries (recorded straight in the embedded log, the app suspended so
// nothing is sent), following next_after to the end; one op is the whole
// backlog. It reports the milliseconds and the process CPU per delivery.
func BenchmarkBulkResend(b *testing.B) {
	const backlog = 4000
	p := harness.Start(b, node.Config{DataDir: b.TempDir(), PartnerRateLimit: -1})
	p.Client = &http.Client{Timeout: 120 * time.Second}
	b.StopTimer()
	var cpu time.Duration
	var wall time.Duration
	for range b.N {
		a := p.CreateApp("bulk")
		if res := p.Admin("POST", fmt.Sprintf("/admin/v1/apps/%d/suspend", a.ID), map[string]any{"reason": "backlog"}); res.Status != http.StatusOK {
			b.Fatalf("suspend: %d %s", res.Status, res.Raw)
		}
		harness.AppendBacklog(b, p, a.ID, backlog, 0)
		if err := p.Node.WaitCaughtUp(b.Context()); err != nil {
			b.Fatal(err)
		}
		c0, t0 := cpuTime(b), time.Now()
		b.StartTimer()
		queued, _ := harness.ResendAll(b, p, a.ID)
		b.StopTimer()
		cpu, wall = cpu+cpuTime(b)-c0, wall+time.Since(t0)
		if queued != backlog {
			b.Fatalf("queued %d of %d", queued, backlog)
		}
	}
	b.ReportMetric(float64(wall.Milliseconds())/float64(b.N), "ms/backlog")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*backlog), "cpu-µs/delivery")
}
