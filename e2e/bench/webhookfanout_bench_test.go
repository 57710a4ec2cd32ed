package bench_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// BenchmarkWebhookFanoutDrain is BenchmarkWebhookDrain for an app with 1
// and with 10 endpoints, each with a receiver (a host) of its own: b.N
// profile updates (at least 1,000) are delivered to every endpoint, and
// the CPU from the first receipt to the last is divided by the deliveries
// (cpu-µs/delivery) and by the events (cpu-µs/event). The receivers run
// in this process, so their CPU is in both figures; what a fan-out adds
// per delivery is the difference between the two sub-benchmarks.
func BenchmarkWebhookFanoutDrain(b *testing.B) {
	for _, endpoints := range []int{1, 10} {
		b.Run(fmt.Sprintf("endpoints=%d", endpoints), func(b *testing.B) { benchFanoutDrain(b, endpoints) })
	}
}

func benchFanoutDrain(b *testing.B, endpoints int) {
	n := max(b.N, 1000)
	total := n * endpoints
	b.StopTimer()
	cooldown := 45 * time.Second
	cfg := node.Config{DataDir: b.TempDir(), WebhookAllowLoopback: true, PartnerRateLimit: -1,
		WebhookBreakerFailures: 1, WebhookBreakerCooldown: cooldown,
		WebhookSchedule: []time.Duration{time.Second, time.Second, time.Second, time.Second, time.Second}}
	p := harness.Start(b, cfg)
	p.Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	a := p.CreateApp("fanout")

	rcvr := newDrainReceiver(b, total)
	for i := 0; i < endpoints; i++ {
		rcv := httptest.NewServer(rcvr)
		defer rcv.Close()
		if i == 0 {
			p.ConfigureWebhook(a, rcv.URL, "user.profile.updated")
			continue
		}
		if res := a.Do("POST", "/open/v1/webhooks/endpoints", map[string]any{"url": rcv.URL, "events": []string{"user.profile.updated"}}); res.Status != http.StatusCreated {
			b.Fatalf("add endpoint: %d %s", res.Status, res.Raw)
		}
	}

	writeBacklog(b, p, a, "f", n, total, cooldown)
	elapsed, cpu := rcvr.drain(b, cooldown+120*time.Second)
	b.ReportMetric(float64(total)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(total), "cpu-µs/delivery")
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/event")
}
