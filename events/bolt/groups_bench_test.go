package bolt_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/bolt"
)

// BenchmarkRegisterGroups appends register-shaped writes (a binding stream
// of one event and a new user stream of three, in one multi-stream append,
// random event ids) at the end of a log of 100,000 events, from 1, 4 and 32
// writers: what one write costs the store when it commits alone and when
// the group commit shares a transaction and its fsyncs among writers. It
// reports the process's CPU per write; the ratio between the writer counts
// of one run is the number that counts (the share of a commit that is paid
// per transaction rather than per event).
//
//	go test -run '^$' -bench RegisterGroups -count 3 ./events/bolt/
func BenchmarkRegisterGroups(b *testing.B) {
	ctx := context.Background()
	payload := letters(350)
	template := templateLog(b, payload)
	for _, run := range []struct {
		writers int
		rate    float64 // offered writes per second; 0: each writer as fast as answered
	}{{1, 0}, {4, 0}, {32, 0}, {32, 100}} {
		for _, window := range []bool{false, true} {
			name := fmt.Sprintf("writers=%d", run.writers)
			if run.rate > 0 {
				name += fmt.Sprintf(",rate=%.0f", run.rate)
			}
			name += fmt.Sprintf(",window=%t", window)
			b.Run(name, func(b *testing.B) {
				path := filepath.Join(b.TempDir(), "events.db")
				copyFile(b, template, path)
				s := openT(b, path)
				if !window {
					bolt.SetWindow(s, func(time.Duration) time.Duration { return 0 })
				}
				var n atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				cpu0, c0, start := cpuTime(b), bolt.Commits(s), time.Now()
				for range run.writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := n.Add(1)
							if i > int64(b.N) {
								return
							}
							if run.rate > 0 {
								// Write i is due at i/rate: an open loop, as
								// clients sending at a fixed rate.
								time.Sleep(time.Until(start.Add(time.Duration(float64(i) / run.rate * float64(time.Second)))))
							}
							binding := events.Proposed{ID: uuid.NewString(), Type: "bench.bound", Data: payload[:60]}
							user := []events.Proposed{
								{ID: uuid.NewString(), Type: "bench.registered", Data: payload},
								{ID: uuid.NewString(), Type: "bench.group", Data: payload[:120]},
								{ID: uuid.NewString(), Type: "bench.member", Data: payload[:200]},
							}
							if _, err := s.AppendMulti(ctx,
								events.StreamAppend{Stream: fmt.Sprintf("binding-%d", i), Expected: events.NoStream(), Events: []events.Proposed{binding}},
								events.StreamAppend{Stream: fmt.Sprintf("user-%d", i), Expected: events.NoStream(), Events: user},
							); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
				b.ReportMetric(float64(b.N)/float64(bolt.Commits(s)-c0), "writes/commit")
			})
		}
	}
}
