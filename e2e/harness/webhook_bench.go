package harness

import (
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

	"github.com/healthtech/partner-open-platform/internal/node"
)

// WebhookLoad is what one run of RunWebhookLoad measured.
type WebhookLoad struct {
	writes, deliveries float64 // per second, over the same run
	p50, P99           time.Duration
}

// BenchWebhooks measures webhook delivery on a node built from cfg: b.N
// profile updates from parallel clients, each producing one delivery to a
// local receiver. It reports deliveries per second, the write rate of the
// same run and their ratio, and the latency from the update request's start
// (just before the append) to the webhook's arrival.
func BenchWebhooks(b *testing.B, cfg node.Config, clients int) {
	r := RunWebhookLoad(b, cfg, clients, b.N, 0, false)
	r.Report(b, "")
}

func (r WebhookLoad) Report(b *testing.B, prefix string) {
	b.ReportMetric(float64(r.p50.Microseconds())/1000, prefix+"p50-ms")
	b.ReportMetric(float64(r.P99.Microseconds())/1000, prefix+"p99-ms")
	b.ReportMetric(r.deliveries, prefix+"deliveries/s")
	b.ReportMetric(r.writes, prefix+"writes/s")
	b.ReportMetric(r.deliveries/r.writes, prefix+"deliveries/writes")
}

// RunWebhookLoad sends n profile updates from clients parallel clients,
// paced at rate per second (0: as fast as the node acknowledges), and waits
// for their n webhooks. With slow, a second app whose endpoint hangs until
// the run ends gets one update in four more (never counted): the others'
// latency shows whether it holds them up.
func RunWebhookLoad(b *testing.B, cfg node.Config, clients, n int, rate float64, slow bool) WebhookLoad {
	b.StopTimer()
	cfg.WebhookAllowLoopback, cfg.PartnerRateLimit = true, -1
	p := Start(b, cfg)
	p.Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	a := p.CreateApp("bench")

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
	p.ConfigureWebhook(a, rcv.URL, "user.profile.updated")

	register := func(a *App, prefix string, n int) []int64 {
		users := make([]int64, n)
		for i := range users {
			var reg RegisterData
			p.Send(a.Request("POST", "/open/v1/channel/users", map[string]any{"channel_user_id": fmt.Sprint(prefix, i), "user": map[string]any{"name": "n"}}, time.Now())).Data(b, &reg)
			users[i] = reg.OpenUserID
		}
		return users
	}
	users := register(a, "b", n)
	var slowApp *App
	var slowUsers []int64
	hang := make(chan struct{})
	if slow {
		slowApp = p.CreateApp("slow")
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-hang:
			case <-time.After(10 * time.Second):
			}
		}))
		defer srv.Close()
		defer close(hang) // before srv.Close, so its handlers return
		p.ConfigureWebhook(slowApp, srv.URL, "user.profile.updated")
		slowUsers = register(slowApp, "s", n/4+1)
	}
	want.Store(int64(n))
	var next atomic.Int64
	ProfileMeasured(b)
	b.StartTimer()
	begin := time.Now()
	var wg sync.WaitGroup
	patch := func(a *App, user int64) {
		// A distinct body per update, so each gets its own signature.
		req := a.Request("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", user), map[string]any{"nickname": fmt.Sprint("x", user)}, time.Now())
		if a != slowApp {
			mu.Lock()
			sent[user] = time.Now()
			mu.Unlock()
		}
		if res := p.Send(req); res.Status != http.StatusOK {
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
	r := WebhookLoad{writes: float64(n) / wrote.Seconds(), deliveries: float64(n) / elapsed.Seconds()}
	if len(latencies) > 0 {
		r.p50, r.P99 = latencies[len(latencies)/2], latencies[len(latencies)*99/100]
	}
	return r
}
