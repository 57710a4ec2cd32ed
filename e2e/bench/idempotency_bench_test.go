package bench_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// Compare with BenchmarkRegisterHTTP of the same run:
//
//	go test -run '^$' -bench 'Register(HTTP|KeyedHTTP|ReplayHTTP)' -benchtime 3s -count 3 ./e2e/bench

// BenchmarkRegisterKeyedHTTP is BenchmarkRegisterHTTP with a fresh
// Idempotency-Key on each register: one stream read and two more appends
// (claim, answer) per request.
func BenchmarkRegisterKeyedHTTP(b *testing.B) {
	p, a := benchPlatform(b)
	var n atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			req := a.Request("POST", "/open/v1/channel/users", map[string]any{"channel_user_id": fmt.Sprintf("bench-%d", i), "user": map[string]any{"name": "n", "phone": "13812345678"}}, time.Now())
			req.Header.Set("Idempotency-Key", fmt.Sprintf("key-%d", i))
			if res := p.Send(req); res.Status != http.StatusCreated {
				b.Fatalf("register: %d %s", res.Status, res.Raw)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "registers/s")
}

// BenchmarkRegisterReplayHTTP retries one keyed register: each request reads
// the key's stream, opens the sealed answer and replays it.
func BenchmarkRegisterReplayHTTP(b *testing.B) {
	p, a := benchPlatform(b)
	body := map[string]any{"channel_user_id": "bench-1", "user": map[string]any{"name": "n", "phone": "13812345678"}}
	keyed := func() *http.Request {
		req := a.Request("POST", "/open/v1/channel/users", body, time.Now())
		req.Header.Set("Idempotency-Key", "key-1")
		return req
	}
	if res := p.Send(keyed()); res.Status != http.StatusCreated {
		b.Fatalf("register: %d %s", res.Status, res.Raw)
	}
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if res := p.Send(keyed()); res.Status != http.StatusCreated || res.Header.Get("Idempotent-Replayed") != "true" {
				b.Fatalf("replay: %d %s", res.Status, res.Raw)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "replays/s")
}
