package bench_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// patchClients is how many clients PATCH at once, each its own user, as
// scripts/bench.sh measures it.
const patchClients = 8

// BenchmarkPatchHTTP measures PATCH of a user's profile from 8 clients
// (each on its own user, an app without a webhook URL) on three nodes, in
// one run, to tell the cost of webhook delivery from the write's own:
//
//   - quiet: a fresh node;
//   - after-deliveries: a node that first delivered a burst of webhooks
//     (another app, 2,000 PATCHes, all received) before the measured PATCHes;
//   - delivering: the measured PATCHes' app has a webhook URL, so every
//     PATCH is also a delivery created, sent and recorded meanwhile.
//
// cpu-µs/op is the whole process's CPU per PATCH (server, client, the
// dispatcher, the projections and GC), which a shared machine changes less
// than the rate:
//
//	go test -run '^$' -bench PatchHTTP -benchtime 3s ./e2e/bench
func BenchmarkPatchHTTP(b *testing.B) {
	b.Run("quiet", func(b *testing.B) { benchPatch(b, 0, false) })
	b.Run("after-deliveries", func(b *testing.B) { benchPatch(b, 2000, false) })
	b.Run("delivering", func(b *testing.B) { benchPatch(b, 0, true) })
}

// benchPatch starts a node, optionally has it deliver burst webhooks of
// another app first, and measures PATCHes (with a webhook per PATCH when
// delivering).
func benchPatch(b *testing.B, burst int, delivering bool) {
	p := harness.Start(b, node.Config{DataDir: b.TempDir(), PartnerRateLimit: -1, WebhookAllowLoopback: true})
	p.Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	var received atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { received.Add(1) }))
	defer rcv.Close()

	registerUsers := func(a *harness.App, prefix string, n int) []int64 {
		users := make([]int64, n)
		for i := range users {
			var reg harness.RegisterData
			p.Send(a.Request("POST", "/open/v1/channel/users", map[string]any{"channel_user_id": fmt.Sprint(prefix, i), "user": map[string]any{"name": "n"}}, time.Now())).Data(b, &reg)
			users[i] = reg.OpenUserID
		}
		return users
	}
	patch := func(a *harness.App, user int64, i int64) {
		res := p.Send(a.Request("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", user), map[string]any{"nickname": fmt.Sprint("x", i)}, time.Now()))
		if res.Status != http.StatusOK {
			b.Fatalf("patch: %d %s", res.Status, res.Raw)
		}
	}
	if burst > 0 {
		hooks := p.CreateApp("hooks")
		p.ConfigureWebhook(hooks, rcv.URL, "user.profile.updated")
		users := registerUsers(hooks, "h", patchClients)
		var next atomic.Int64
		done := make(chan struct{})
		for w := range patchClients {
			go func() {
				defer func() { done <- struct{}{} }()
				for i := next.Add(1); i <= int64(burst); i = next.Add(1) {
					patch(hooks, users[w], i)
				}
			}()
		}
		for range patchClients {
			<-done
		}
		for deadline := time.Now().Add(2 * time.Minute); received.Load() < int64(burst); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatalf("only %d of %d webhooks arrived", received.Load(), burst)
			}
		}
		if err := p.Node.WaitCaughtUp(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
	a := p.CreateApp("bench")
	if delivering {
		p.ConfigureWebhook(a, rcv.URL, "user.profile.updated")
	}
	users := registerUsers(a, "u", patchClients)
	var next, worker atomic.Int64
	var lat latencies
	b.SetParallelism((patchClients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	harness.ProfileMeasured(b)
	measureCPU(b)
	b.RunParallel(func(pb *testing.PB) {
		user := users[int(worker.Add(1)-1)%patchClients]
		for pb.Next() {
			start := time.Now()
			patch(a, user, next.Add(1))
			lat.add(start)
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "patches/s")
	lat.report(b)
}
