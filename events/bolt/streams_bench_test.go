package bolt_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
)

// BenchmarkAppendManyStreams appends as member upserts do: 32 writers, each
// event to a random one of 100,000 existing streams (named by UUID, so
// scattered over the revision index) plus a new stream (an idempotency
// claim), in one multi-stream append. What a commit costs here is mostly
// the index pages it dirties, which a fresh file with a few streams hides.
func BenchmarkAppendManyStreams(b *testing.B) {
	ctx := context.Background()
	s := openT(b, filepath.Join(b.TempDir(), "events.db"))
	payload := []byte(`{"app_id":1001,"open_user_id":123456789,"app_user_id":"m-1","name":"Zoë","relationship":"SON"}`)
	const streams = 100_000
	names := make([]string, streams)
	for i := range names {
		names[i] = "user-" + uuid.NewString()
	}
	for i := 0; i < streams; i += 1000 {
		parts := make([]events.StreamAppend, 0, 1000)
		for _, n := range names[i : i+1000] {
			parts = append(parts, events.StreamAppend{Stream: n, Expected: events.NoStream(), Events: []events.Proposed{{ID: uuid.NewString(), Type: "bench.created", Data: payload}}})
		}
		if _, err := s.AppendMulti(ctx, parts...); err != nil {
			b.Fatal(err)
		}
	}
	b.SetParallelism(16)
	b.ResetTimer()
	cpu0 := cpuTime(b)
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
		for pb.Next() {
			_, err := s.AppendMulti(ctx,
				events.StreamAppend{Stream: names[rng.IntN(streams)], Expected: events.Any(), Events: []events.Proposed{{ID: uuid.NewString(), Type: "bench.updated", Data: payload}}},
				events.StreamAppend{Stream: "claim-" + uuid.NewString(), Expected: events.NoStream(), Events: []events.Proposed{{ID: uuid.NewString(), Type: "bench.claimed", Data: payload}}},
			)
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
}
