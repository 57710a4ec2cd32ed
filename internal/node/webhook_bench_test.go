package node_test

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

// benchWebhooks measures webhook delivery on a node built from cfg: b.N
// profile updates from parallel clients, each producing one delivery to a local
// receiver. It reports deliveries per second and the latency from the
// update request's start (just before the append) to the webhook's arrival.
func benchWebhooks(b *testing.B, cfg node.Config, clients int) {
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

	users := make([]int64, b.N)
	for i := range users {
		var reg registerData
		p.send(a.request("POST", "/open/v1/channel/users", map[string]any{"channel_user_id": fmt.Sprint("b", i), "user": map[string]any{"name": "n"}}, time.Now())).data(b, &reg)
		users[i] = reg.OpenUserID
	}
	want.Store(int64(b.N))
	var next atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				req := a.request("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", users[i]), map[string]any{"nickname": "x"}, time.Now())
				mu.Lock()
				sent[users[i]] = time.Now()
				mu.Unlock()
				if res := p.send(req); res.Status != http.StatusOK {
					b.Errorf("patch: %d %s", res.Status, res.Raw)
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		b.Fatalf("only %d of %d webhooks arrived", arrived.Load(), b.N)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(latencies)
	if len(latencies) > 0 {
		b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99-ms")
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
}

// BenchmarkWebhooksEmbedded: the dispatcher follows the event store
// directly; 8 clients saturate it (throughput), 1 client shows the latency
// of an unloaded pipeline.
func BenchmarkWebhooksEmbedded(b *testing.B) {
	b.Run("clients=8", func(b *testing.B) { benchWebhooks(b, node.Config{DataDir: b.TempDir()}, 8) })
	b.Run("clients=1", func(b *testing.B) { benchWebhooks(b, node.Config{DataDir: b.TempDir()}, 1) })
}
