package subscribe_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/subscribe"
)

// countTo is a read model that only counts what it is given and says when
// it has seen want events.
type countTo struct {
	want    int64
	applied atomic.Int64
	done    chan struct{}
}

func (c *countTo) Name() string                                        { return "count" }
func (c *countTo) Checkpoint(context.Context) (events.Position, error) { return events.Position{}, nil }
func (c *countTo) Reset(context.Context) error                         { return nil }
func (c *countTo) Apply(_ context.Context, batch []events.Envelope, _ events.Position) error {
	if c.applied.Add(int64(len(batch))) >= c.want {
		select {
		case <-c.done:
		default:
			close(c.done)
		}
	}
	return nil
}

// BenchmarkRunnerCatchUp measures a runner's own cost per event of a
// replay: b.N events already in the log, a read model that only counts, so
// what is left is reading the subscription, handing each event from the
// reader to the applier, batching and checkpointing.
func BenchmarkRunnerCatchUp(b *testing.B) {
	store := benchLog(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := &countTo{want: int64(b.N), done: make(chan struct{})}
	r := subscribe.NewRunner(store, nil, m, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	b.ReportAllocs()
	b.ResetTimer()
	go func() { _ = r.Run(ctx) }()
	<-m.done
}
