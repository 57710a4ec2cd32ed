package projections

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/subscribe"
)

// Watermarks remembers, per app, the position of the last write this node
// acknowledged, so the app's next read waits until the read models reflect it.
type Watermarks struct {
	mu    sync.Mutex
	last  map[int64]events.Position
	floor events.Position
	head  func(context.Context) (events.Position, error)
}

// FollowHead makes every read wait for the log's head as read when the
// read starts (head is events.Store.Head): with several nodes a partner's
// write may have been acknowledged by another node, whose watermarks this
// one never sees, so only the head bounds what it may have written. Costs
// one head read per read; embedded single-node mode does without. A nil
// head turns it off again.
func (w *Watermarks) FollowHead(head func(context.Context) (events.Position, error)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.head = head
}

// Floor makes every read wait for at least pos: a node sets it to the log's
// head when it starts, so writes acknowledged before a restart (whose
// watermarks died with the old process) are seen by the first read after it.
func (w *Watermarks) Floor(pos events.Position) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.floor.Less(pos) {
		w.floor = pos
	}
}

// NewWatermarks returns an empty set.
func NewWatermarks() *Watermarks { return &Watermarks{last: map[int64]events.Position{}} }

// Wrote records an acknowledged write of app at pos.
func (w *Watermarks) Wrote(appID int64, pos events.Position) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last[appID].Less(pos) {
		w.last[appID] = pos
	}
}

// Await waits, at most timeout, until every runner has applied the app's
// last write and the last operator or internal write (recorded as app 0)
// on this node, so a partner sees, say, the shipment an operator just
// confirmed; under FollowHead, until they have applied the log's head.
func (w *Watermarks) Await(ctx context.Context, appID int64, timeout time.Duration, runners ...*subscribe.Runner) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pos, err := w.Target(ctx, appID, true)
	if err != nil {
		return err
	}
	if pos.IsZero() {
		return nil
	}
	for _, r := range runners {
		if err := r.WaitFor(ctx, pos); err != nil {
			return err
		}
	}
	return nil
}

// Target is the position an app's read must reflect (what Await waits
// for): its last write and the last operator write on this node, the
// floor, and under FollowHead, when withHead is set, the log's head read
// now. A caller that learns the head otherwise (in the round trip of its
// own query) passes withHead false and takes the larger of the two.
func (w *Watermarks) Target(ctx context.Context, appID int64, withHead bool) (events.Position, error) {
	w.mu.Lock()
	pos := w.last[appID]
	if op := w.last[0]; pos.Less(op) {
		pos = op
	}
	if pos.Less(w.floor) {
		pos = w.floor
	}
	head := w.head
	w.mu.Unlock()
	if head != nil && withHead {
		h, err := head(ctx)
		if err != nil {
			return events.Position{}, fmt.Errorf("read-your-writes: the log's head: %w", err)
		}
		if pos.Less(h) {
			pos = h
		}
	}
	return pos, nil
}

// FollowsHead reports whether reads must reflect the log's head (FollowHead).
func (w *Watermarks) FollowsHead() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.head != nil
}
