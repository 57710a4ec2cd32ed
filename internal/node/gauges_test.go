package node

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// moves is a read model's move signal as subscribe.Runner.Changed gives it.
type moves struct {
	mu sync.Mutex
	ch chan struct{}
}

func (m *moves) changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ch == nil {
		m.ch = make(chan struct{})
	}
	return m.ch
}

func (m *moves) move() {
	m.mu.Lock()
	if m.ch == nil {
		m.ch = make(chan struct{})
	}
	close(m.ch)
	m.ch = make(chan struct{})
	m.mu.Unlock()
}

// waitCount waits (bounded) until n reaches want.
func waitCount(t *testing.T, n *atomic.Int64, want int64) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); n.Load() < want; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d refreshes within 5s, want %d", n.Load(), want)
		}
	}
}

// TestDeliveryGaugesRefreshOnlyAfterAMove: the deliveries-by-status count
// (a scan of the whole table on Postgres) runs once at start and then only
// after the read model moved, not every period of an idle node; a move
// during a refresh is not missed, and a failed refresh is retried without
// a move.
func TestDeliveryGaugesRefreshOnlyAfterAMove(t *testing.T) {
	const every = 5 * time.Millisecond
	var m moves
	var n atomic.Int64
	var fail atomic.Bool
	moveDuring := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		refreshOnChange(ctx, every, m.changed, func(context.Context) error {
			n.Add(1)
			select {
			case <-moveDuring:
				m.move()
			default:
			}
			if fail.Load() {
				return errors.New("count failed")
			}
			return nil
		})
	}()
	defer func() { cancel(); <-done }()

	waitCount(t, &n, 1)
	time.Sleep(40 * every) // idle: eight periods and more
	if got := n.Load(); got != 1 {
		t.Fatalf("an idle read model was counted %d times, want once", got)
	}
	m.move()
	waitCount(t, &n, 2)
	moveDuring <- struct{}{} // the next refresh sees a move land while it counts
	m.move()
	waitCount(t, &n, 4) // the move during refresh 3 brings refresh 4
	time.Sleep(40 * every)
	if got := n.Load(); got != 4 {
		t.Fatalf("after the moves: %d refreshes, want 4", got)
	}
	fail.Store(true)
	m.move()
	waitCount(t, &n, 7) // failures are retried each period without a move
}
