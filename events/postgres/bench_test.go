package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
)

// BenchmarkAppendParallel measures appends per second with 8 writers, each
// appending one event at a time to its own stream with an exact expected
// revision (what command handlers do); scripts/bench-pgstore.sh runs it
// beside pgbench's TPC-B-like load on the same server.
func BenchmarkAppendParallel(b *testing.B) {
	benchmarkAppend(b, 8)
}

// BenchmarkAppendOne is BenchmarkAppendParallel with one writer: every
// group holds one append, as on a quiet node.
func BenchmarkAppendOne(b *testing.B) {
	benchmarkAppend(b, 1)
}

func benchmarkAppend(b *testing.B, writers int) {
	s := open(b)
	ctx := context.Background()
	var next atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream := fmt.Sprintf("bench-%d-%d", b.N, w)
			for v := uint64(0); next.Add(1) <= int64(b.N); v++ {
				if _, err := s.Append(ctx, stream, events.AfterVersion(v), proposed("bench")); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
	reportTrips(b, s)
}
