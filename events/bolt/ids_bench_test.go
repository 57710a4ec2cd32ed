package bolt_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
)

// BenchmarkAppendIDs appends single events to distinct streams from 16
// parallel writers at the end of a log already holding 100,000 events with
// random IDs, once with random (version 4) event IDs and once with
// time-ordered (version 7) ones, each on its own copy of the same log: the
// ids index takes random inserts (a dirty leaf per event) or inserts at one
// place. It reports the process's CPU per append; the ratio of the two
// sub-benchmarks in one run is the number that counts.
//
//	go test -run '^$' -bench AppendIDs -count 3 ./events/bolt/
func BenchmarkAppendIDs(b *testing.B) {
	ctx := context.Background()
	payload := []byte(`{"app_id":1001,"open_user_id":123456789,"name":"Zoë","phone":"+8613800000000","gender":"female"}`)
	template := templateLog(b, payload)
	for _, kind := range []struct {
		name string
		id   func() string
	}{
		{"random", uuid.NewString},
		{"time-ordered", func() string { return uuid.Must(uuid.NewV7()).String() }},
	} {
		b.Run("ids="+kind.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "events.db")
			copyFile(b, template, path)
			s := openT(b, path)
			var n atomic.Int64
			b.SetParallelism(8)
			b.ResetTimer()
			cpu0 := cpuTime(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					ev := events.Proposed{ID: kind.id(), Type: "bench.appended", Data: payload}
					if _, err := s.Append(ctx, fmt.Sprintf("bench-%d", n.Add(1)), events.NoStream(), ev); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// templateLog writes a log of 100,000 single-event streams of payload,
// random event ids, for a benchmark to copy before each run: appends are
// measured at the end of a log of some size, not into an empty one.
func templateLog(b *testing.B, payload []byte) string {
	ctx := context.Background()
	template := filepath.Join(b.TempDir(), "template.db")
	s := openT(b, template)
	for batch := range 200 {
		parts := make([]events.StreamAppend, 0, 500)
		for i := range 500 {
			ev := events.Proposed{ID: uuid.NewString(), Type: "bench.appended", Data: payload}
			parts = append(parts, events.StreamAppend{Stream: fmt.Sprintf("old-%d-%d", batch, i), Expected: events.NoStream(), Events: []events.Proposed{ev}})
		}
		if _, err := s.AppendMulti(ctx, parts...); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	return template
}
