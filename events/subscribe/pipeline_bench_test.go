package subscribe_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/events/subscribe"
)

// BenchmarkPipelineStore measures the pipelined mode's own cost per event
// over the event store: b.N events already in the log, a preparation that
// counts and a commit that does nothing, so what is left is following,
// batching, staging and checkpointing.
func BenchmarkPipelineStore(b *testing.B) {
	store := benchLog(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := 0
	b.ReportAllocs()
	b.ResetTimer()
	err := subscribe.Pipeline[int]{Name: "bench", Source: subscribe.StoreSource{Store: store, Checkpoints: &memCheckpoints{}},
		Prepare: func(_ context.Context, recs []events.Recorded) (int, error) { return len(recs), nil },
		Commit: func(_ context.Context, ns []int) error {
			for _, n := range ns {
				seen += n
			}
			if seen >= b.N {
				cancel()
			}
			return nil
		}}.Run(ctx)
	if err != nil {
		b.Fatal(err)
	}
}

// benchLog is an in-memory log holding b.N small events in streams of 256,
// closed when the benchmark ends.
func benchLog(b *testing.B) *memory.Store {
	store := memory.New()
	b.Cleanup(func() { store.Close() })
	evs := make([]events.Proposed, 0, 256)
	for i := 0; i < b.N; i += len(evs) {
		evs = evs[:0]
		for j := i; j < min(i+256, b.N); j++ {
			evs = append(evs, events.Proposed{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", j), Type: "t", Data: []byte(`{}`)})
		}
		if _, err := store.Append(context.Background(), fmt.Sprint("s-", i), events.Any(), evs...); err != nil {
			b.Fatal(err)
		}
	}
	return store
}
