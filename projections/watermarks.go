package projections

import (
	"context"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

// Watermarks remembers, per app, the position of the last write this node
// acknowledged, so the app's next read waits until the read models reflect it.
type Watermarks struct {
	mu    sync.Mutex
	last  map[int64]events.Position
	floor events.Position
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
// on this node, so a partner sees, say, the shipment an operator just confirmed.
func (w *Watermarks) Await(ctx context.Context, appID int64, timeout time.Duration, runners ...*Runner) error {
	w.mu.Lock()
	pos := w.last[appID]
	if op := w.last[0]; pos.Less(op) {
		pos = op
	}
	if pos.Less(w.floor) {
		pos = w.floor
	}
	w.mu.Unlock()
	if pos.IsZero() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, r := range runners {
		if err := r.WaitFor(ctx, pos); err != nil {
			return err
		}
	}
	return nil
}
