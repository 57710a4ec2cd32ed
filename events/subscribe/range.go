package subscribe

import (
	"context"
	"fmt"

	"github.com/healthtech/partner-open-platform/events"
)

// RangeSource is a bounded stretch of the log as a pipeline's Source: the
// events after a position (From, or where the client's own checkpoint
// says it got to) up to and including Until, in log order, in batches of
// at most Batch; once past Until the feed ends and the pipeline returns.
// It keeps no checkpoint of its own: a client that must resume records
// its position with its effect and gives it back through From.
type RangeSource struct {
	Store events.Store
	From  func(ctx context.Context) (events.Position, error)
	Until events.Position
	// Batch bounds how many events one batch holds (default 256).
	Batch int
}

// Open starts reading after From.
func (s RangeSource) Open(ctx context.Context) (Feed, error) {
	var from events.Position
	if s.From != nil {
		var err error
		if from, err = s.From(ctx); err != nil {
			return nil, fmt.Errorf("range start: %w", err)
		}
	}
	size := s.Batch
	if size <= 0 {
		size = 256
	}
	return &rangeFeed{src: s, at: from, size: size}, nil
}

type rangeFeed struct {
	src  RangeSource
	at   events.Position
	size int
	done bool
}

// Next reads the next page of the range; none once past Until, or when
// the log holds nothing more.
func (f *rangeFeed) Next(ctx context.Context) ([]events.Recorded, Mark, error) {
	if f.done || ctx.Err() != nil || !f.at.Less(f.src.Until) {
		return nil, nil, nil
	}
	recs, err := f.src.Store.ReadAll(ctx, f.at, f.size)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("read the range after %s: %w", f.at, err)
	}
	n := 0
	for n < len(recs) && !f.src.Until.Less(recs[n].Position) {
		n++
	}
	if n < len(recs) {
		f.done = true // past Until
	}
	if n == 0 {
		return nil, nil, nil
	}
	f.at = recs[n-1].Position
	return recs[:n:n], f.at, nil
}

// Commit has nothing to record: the client keeps its own position.
func (f *rangeFeed) Commit(context.Context, []Mark) error { return nil }

// Close stops reading.
func (f *rangeFeed) Close() error { return nil }
