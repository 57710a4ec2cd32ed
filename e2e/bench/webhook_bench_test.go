package bench_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// BenchmarkWebhooksEmbedded: the dispatcher follows the event store
// directly; 8 clients saturate it (throughput; deliveries/writes is the
// ratio to the write rate of the same run), 1 client shows the latency
// of an unloaded pipeline.
func BenchmarkWebhooksEmbedded(b *testing.B) {
	b.Run("clients=8", func(b *testing.B) { harness.BenchWebhooks(b, node.Config{DataDir: b.TempDir()}, 8) })
	b.Run("clients=1", func(b *testing.B) { harness.BenchWebhooks(b, node.Config{DataDir: b.TempDir()}, 1) })
}

// BenchmarkWebhooksPaced offers 1,000 updates per second (the latency
// goal: append→attempt p99 under 100 ms at that rate).
func BenchmarkWebhooksPaced(b *testing.B) {
	b.Run("rate=1000", func(b *testing.B) {
		harness.RunWebhookLoad(b, node.Config{DataDir: b.TempDir()}, 32, max(b.N, 2000), 1000, false).Report(b, "")
	})
}

// BenchmarkWebhooksSlowEndpoint measures one app's latency at 500 updates/s
// without and then with another app whose endpoint hangs for 10 s on every
// POST, in the same run: slow/fast-p99-ratio near 1 means the hanging
// endpoint holds nobody else up.
func BenchmarkWebhooksSlowEndpoint(b *testing.B) {
	n := max(b.N, 2000)
	base := harness.RunWebhookLoad(b, node.Config{DataDir: b.TempDir()}, 16, n, 500, false)
	with := harness.RunWebhookLoad(b, node.Config{DataDir: b.TempDir()}, 16, n, 500, true)
	base.Report(b, "alone-")
	with.Report(b, "beside-slow-")
	b.ReportMetric(float64(with.P99)/float64(max(base.P99, 1)), "slow/fast-p99-ratio")
}

// BenchmarkWebhookDrain measures the sender alone: b.N deliveries (at least
// 2,000) are created while the receiver answers 503, which opens the
// endpoint's breaker (one failure does) for a cooldown long enough to
// create them all; then the receiver is up, the breaker's probe succeeds,
// and the sender drains the backlog. Time and the process's CPU are taken
// from the first receipt to the last, so deliveries/s and
// cpu-µs/delivery are the sender's (claim, load, sign, POST, outcome
// append, projection of the outcome), not the writes'.
func BenchmarkWebhookDrain(b *testing.B) {
	n := max(b.N, 2000)
	b.StopTimer()
	cooldown := 45 * time.Second // the backlog took 22–27 s to write at load 18–25
	cfg := node.Config{DataDir: b.TempDir(), WebhookAllowLoopback: true, PartnerRateLimit: -1,
		WebhookBreakerFailures: 1, WebhookBreakerCooldown: cooldown,
		// The few attempts that failed before the breaker opened are due
		// again well before the probe, so they drain with the rest.
		WebhookSchedule: []time.Duration{time.Second, time.Second, time.Second, time.Second, time.Second}}
	p := harness.Start(b, cfg)
	p.Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	a := p.CreateApp("drain")

	rcvr := newDrainReceiver(b, n)
	rcv := httptest.NewServer(rcvr)
	defer rcv.Close()
	p.ConfigureWebhook(a, rcv.URL, "user.profile.updated")

	writeBacklog(b, p, a, "d", n, n, cooldown)
	elapsed, cpu := rcvr.drain(b, cooldown+120*time.Second)
	b.ReportMetric(float64(n)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/delivery")
}

// writeBacklog registers n users from 16 clients (channel ids prefix+i)
// and updates each one once, then waits until queued deliveries (pending
// or retrying) number at least queued: every update's delivery is recorded
// before the receiver comes up (plus one per register: recorded, never
// sent, as the app does not subscribe to registrations). It fails if that
// took longer than cooldown, the breakers' hold: the drain would overlap it.
func writeBacklog(b *testing.B, p *harness.Platform, a *harness.App, prefix string, n, queued int, cooldown time.Duration) {
	b.Helper()
	begin := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				var reg harness.RegisterData
				p.Send(a.Request("POST", "/open/v1/channel/users", map[string]any{"channel_user_id": fmt.Sprint(prefix, i), "user": map[string]any{"name": "n"}}, time.Now())).Data(b, &reg)
				if res := p.Send(a.Request("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID), map[string]any{"nickname": fmt.Sprint("x", i)}, time.Now())); res.Status != http.StatusOK {
					b.Errorf("patch: %d %s", res.Status, res.Raw)
					return
				}
			}
		}()
	}
	wg.Wait()
	ctx := context.Background()
	for deadline := time.Now().Add(60 * time.Second); ; {
		counts, err := p.Node.ReadModel.CountByStatus(ctx)
		if err != nil {
			b.Fatal(err)
		}
		got := counts[domain.DeliveryPending] + counts[domain.DeliveryRetrying]
		if got >= queued {
			if took := time.Since(begin); took > cooldown {
				b.Fatalf("writing the backlog took %s, longer than the breakers' cooldown %s: the drain overlapped it", took, cooldown)
			}
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d deliveries queued after 60 s", got, queued)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// drainReceiver is a drain benchmark's receiver: it answers 503 (holding
// the backlog behind the endpoints' breakers) until drain opens it, then
// counts distinct delivery ids until want have arrived.
type drainReceiver struct {
	b        *testing.B
	want     int
	up       atomic.Bool
	mu       sync.Mutex
	seen     map[string]bool
	first    time.Time
	firstCPU time.Duration
	done     chan struct{}
}

func newDrainReceiver(b *testing.B, want int) *drainReceiver {
	return &drainReceiver{b: b, want: want, seen: map[string]bool{}, done: make(chan struct{})}
}

func (d *drainReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	if !d.up.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.seen) == 0 {
		d.first, d.firstCPU = time.Now(), cpuTime(d.b)
	}
	id := r.Header.Get("X-Webhook-Id")
	if !d.seen[id] {
		d.seen[id] = true
		if len(d.seen) == d.want {
			close(d.done)
		}
	}
}

// drain opens the receiver, times the benchmark until every delivery has
// arrived (at most timeout), and answers the time and the process's CPU
// from the first receipt to the last.
func (d *drainReceiver) drain(b *testing.B, timeout time.Duration) (elapsed, cpu time.Duration) {
	harness.ProfileMeasured(b)
	d.up.Store(true)
	b.StartTimer()
	select {
	case <-d.done:
	case <-time.After(timeout):
		d.mu.Lock()
		b.Fatalf("only %d of %d webhooks arrived", len(d.seen), d.want)
	}
	b.StopTimer()
	d.mu.Lock()
	defer d.mu.Unlock()
	return time.Since(d.first), cpuTime(b) - d.firstCPU
}
