package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// webhookLoad is what one run of runWebhookLoad measured.
type webhookLoad struct {
	writes, deliveries float64 // per second, over the same run
	p50, p99           time.Duration
}

// benchWebhooks measures webhook delivery on a node built from cfg: b.N
// profile updates from parallel clients, each producing one delivery to a
// local receiver. It reports deliveries per second, the write rate of the
// same run and their ratio, and the latency from the update request's start
// (just before the append) to the webhook's arrival.
func benchWebhooks(b *testing.B, cfg node.Config, clients int) {
	r := runWebhookLoad(b, cfg, clients, b.N, 0, false)
	r.report(b, "")
}

func (r webhookLoad) report(b *testing.B, prefix string) {
	b.ReportMetric(float64(r.p50.Microseconds())/1000, prefix+"p50-ms")
	b.ReportMetric(float64(r.p99.Microseconds())/1000, prefix+"p99-ms")
	b.ReportMetric(r.deliveries, prefix+"deliveries/s")
	b.ReportMetric(r.writes, prefix+"writes/s")
	b.ReportMetric(r.deliveries/r.writes, prefix+"deliveries/writes")
}

// runWebhookLoad sends n profile updates from clients parallel clients,
// paced at rate per second (0: as fast as the node acknowledges), and waits
// for their n webhooks. With slow, a second app whose endpoint hangs until
// the run ends gets one update in four more (never counted): the others'
// latency shows whether it holds them up.
func runWebhookLoad(b *testing.B, cfg node.Config, clients, n int, rate float64, slow bool) webhookLoad {
	b.StopTimer()
	cfg.WebhookAllowLoopback, cfg.PartnerRateLimit = true, -1
	p := start(b, cfg)
	p.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	a := p.createApp("bench")

	var mu sync.Mutex
	sent := map[int64]time.Time{}
	var latencies []time.Duration
	var arrived atomic.Int64
	done := make(chan struct{})
	var want atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		var body struct {
			OpenUserID int64 `json:"open_user_id"`
		}
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		mu.Lock()
		if t0, ok := sent[body.OpenUserID]; ok {
			latencies = append(latencies, at.Sub(t0))
			delete(sent, body.OpenUserID)
		}
		mu.Unlock()
		if arrived.Add(1) == want.Load() {
			close(done)
		}
	}))
	defer rcv.Close()
	p.configureWebhook(a, rcv.URL, "user.profile.updated")

	register := func(a *app, prefix string, n int) []int64 {
		users := make([]int64, n)
		for i := range users {
			var reg registerData
			p.send(a.request("POST", "/open/v1/channel/users", map[string]any{"channel_user_id": fmt.Sprint(prefix, i), "user": map[string]any{"name": "n"}}, time.Now())).data(b, &reg)
			users[i] = reg.OpenUserID
		}
		return users
	}
	users := register(a, "b", n)
	var slowApp *app
	var slowUsers []int64
	hang := make(chan struct{})
	if slow {
		slowApp = p.createApp("slow")
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-hang:
			case <-time.After(10 * time.Second):
			}
		}))
		defer srv.Close()
		defer close(hang) // before srv.Close, so its handlers return
		p.configureWebhook(slowApp, srv.URL, "user.profile.updated")
		slowUsers = register(slowApp, "s", n/4+1)
	}
	want.Store(int64(n))
	var next atomic.Int64
	profileMeasured(b)
	b.StartTimer()
	begin := time.Now()
	var wg sync.WaitGroup
	patch := func(a *app, user int64) {
		// A distinct body per update, so each gets its own signature.
		req := a.request("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", user), map[string]any{"nickname": fmt.Sprint("x", user)}, time.Now())
		if a != slowApp {
			mu.Lock()
			sent[user] = time.Now()
			mu.Unlock()
		}
		if res := p.send(req); res.Status != http.StatusOK {
			b.Errorf("patch: %d %s", res.Status, res.Raw)
		}
	}
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				if rate > 0 {
					time.Sleep(time.Until(begin.Add(time.Duration(float64(i) / rate * float64(time.Second)))))
				}
				patch(a, users[i])
				if slow && i%4 == 0 {
					patch(slowApp, slowUsers[i/4])
				}
			}
		}()
	}
	wg.Wait()
	wrote := time.Since(begin)
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		b.Fatalf("only %d of %d webhooks arrived", arrived.Load(), n)
	}
	elapsed := time.Since(begin)
	b.StopTimer()
	slices.Sort(latencies)
	r := webhookLoad{writes: float64(n) / wrote.Seconds(), deliveries: float64(n) / elapsed.Seconds()}
	if len(latencies) > 0 {
		r.p50, r.p99 = latencies[len(latencies)/2], latencies[len(latencies)*99/100]
	}
	return r
}

// BenchmarkWebhooksEmbedded: the dispatcher follows the event store
// directly; 8 clients saturate it (throughput; deliveries/writes is the
// ratio to the write rate of the same run), 1 client shows the latency
// of an unloaded pipeline.
func BenchmarkWebhooksEmbedded(b *testing.B) {
	b.Run("clients=8", func(b *testing.B) { benchWebhooks(b, node.Config{DataDir: b.TempDir()}, 8) })
	b.Run("clients=1", func(b *testing.B) { benchWebhooks(b, node.Config{DataDir: b.TempDir()}, 1) })
}

// BenchmarkWebhooksPaced offers 1,000 updates per second (the latency
// goal: append→attempt p99 under 100 ms at that rate).
func BenchmarkWebhooksPaced(b *testing.B) {
	b.Run("rate=1000", func(b *testing.B) {
		runWebhookLoad(b, node.Config{DataDir: b.TempDir()}, 32, max(b.N, 2000), 1000, false).report(b, "")
	})
}

// BenchmarkWebhooksSlowEndpoint measures one app's latency at 500 updates/s
// without and then with another app whose endpoint hangs for 10 s on every
// POST, in the same run: slow/fast-p99-ratio near 1 means the hanging
// endpoint holds nobody else up.
func BenchmarkWebhooksSlowEndpoint(b *testing.B) {
	n := max(b.N, 2000)
	base := runWebhookLoad(b, node.Config{DataDir: b.TempDir()}, 16, n, 500, false)
	with := runWebhookLoad(b, node.Config{DataDir: b.TempDir()}, 16, n, 500, true)
	base.report(b, "alone-")
	with.report(b, "beside-slow-")
	b.ReportMetric(float64(with.p99)/float64(max(base.p99, 1)), "slow/fast-p99-ratio")
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
	p := start(b, cfg)
	p.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	a := p.createApp("drain")

	var up atomic.Bool
	var mu sync.Mutex
	seen := map[string]bool{}
	var first time.Time
	var firstCPU time.Duration
	done := make(chan struct{})
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if !up.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) == 0 {
			first, firstCPU = time.Now(), cpuTime(b)
		}
		id := r.Header.Get("X-Webhook-Id")
		if !seen[id] {
			seen[id] = true
			if len(seen) == n {
				close(done)
			}
		}
	}))
	defer rcv.Close()
	p.configureWebhook(a, rcv.URL, "user.profile.updated")

	// Write the backlog from 16 clients: register a user, then update it.
	begin := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				var reg registerData
				p.send(a.request("POST", "/open/v1/channel/users", map[string]any{"channel_user_id": fmt.Sprint("d", i), "user": map[string]any{"name": "n"}}, time.Now())).data(b, &reg)
				if res := p.send(a.request("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID), map[string]any{"nickname": fmt.Sprint("x", i)}, time.Now())); res.Status != http.StatusOK {
					b.Errorf("patch: %d %s", res.Status, res.Raw)
					return
				}
			}
		}()
	}
	wg.Wait()
	// Every update's delivery is recorded before the receiver comes up
	// (plus one per register: recorded, never sent, as the app does not
	// subscribe to registrations).
	ctx := context.Background()
	for deadline := time.Now().Add(60 * time.Second); ; {
		counts, err := p.node.ReadModel.CountByStatus(ctx)
		if err != nil {
			b.Fatal(err)
		}
		queued := counts[domain.DeliveryPending] + counts[domain.DeliveryRetrying]
		if queued >= n {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d deliveries queued after 60 s", queued, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if time.Since(begin) > cooldown {
		b.Fatalf("writing the backlog took %s, longer than the breaker's cooldown %s: the drain overlapped it", time.Since(begin), cooldown)
	}
	profileMeasured(b)
	up.Store(true)
	b.StartTimer()
	select {
	case <-done:
	case <-time.After(cooldown + 120*time.Second):
		mu.Lock()
		b.Fatalf("only %d of %d webhooks arrived", len(seen), n)
	}
	b.StopTimer()
	mu.Lock()
	elapsed, cpu := time.Since(first), cpuTime(b)-firstCPU
	mu.Unlock()
	b.ReportMetric(float64(n)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/delivery")
}
