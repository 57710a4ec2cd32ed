package webhooks

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
)

// dueSchedule is a delivery store with nothing due now and a settable
// earliest due time.
type dueSchedule struct {
	mu   sync.Mutex
	next time.Time
}

func (q *dueSchedule) Due(context.Context, time.Time, int, ...int64) ([]domain.DueDelivery, error) {
	return nil, nil
}

func (q *dueSchedule) NextDue(context.Context) (time.Time, bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.next, !q.next.IsZero(), nil
}

func (q *dueSchedule) schedule(at time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.next = at
}

// jumpClock moves only when the test sets it; Until fires only for a time
// already reached (nothing advances it while the sender sleeps).
type jumpClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *jumpClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *jumpClock) Until(t time.Time) <-chan time.Time {
	ch := make(chan time.Time, 1)
	if now := c.Now(); !t.After(now) {
		ch <- now
	}
	return ch
}

func (c *jumpClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// moves is a read model's progress as the sender watches it: Changed
// closes at the next move.
type moves struct {
	mu sync.Mutex
	ch chan struct{}
}

func newMoves() *moves { return &moves{ch: make(chan struct{})} }

func (m *moves) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ch
}

func (m *moves) move() {
	m.mu.Lock()
	defer m.mu.Unlock()
	close(m.ch)
	m.ch = make(chan struct{})
}

func (m *moves) WaitFor(context.Context, events.Position) error { return nil }
func (m *moves) WaitReady(context.Context) error                { return nil }

// idleSender is a send loop over a store with nothing due, a clock that
// moves only when the test sets it, and read models that move when the
// test says, after its start scan.
func idleSender(t *testing.T, t0 time.Time) (*sendLoop, *dueSchedule, *jumpClock, *moves) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	q, clk, deliveries := &dueSchedule{}, &jumpClock{now: t0}, newMoves()
	d := &Dispatcher{Deliveries: q, Clock: clk, Projected: deliveries, AppsReady: newMoves(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	d.handover.init()
	s := d.newSendLoop(ctx)
	s.watch()
	s.refill(t0, 1) // the start scan: nothing due
	if w := s.waitFor(t0); w != idleRescan {
		t.Fatalf("with nothing due the sender sleeps %v, want the idle rescan %v", w, idleRescan)
	}
	return s, q, clk, deliveries
}

// waitReturns runs one wait of s, failing the test if it has not come
// back within a bound far beyond the real-time spacing it may take.
func waitReturns(t *testing.T, s *sendLoop, now time.Time, what string) {
	t.Helper()
	done := make(chan bool, 1)
	go func() { done <- s.wait(now, false) }()
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("wait ended")
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the sender still sleeps: %s", what)
	}
}

// A retry scheduled while the sender's earliest due time was fresh from
// its last read, followed by a scan that found nothing due and a clock
// that jumps to just before the retry, must not leave the sender asleep
// on the idle rescan counted from the jumped clock: it reads the due time
// again (in real time, whatever the clock does) and sleeps exactly until
// the retry.
func TestSenderSleepRestsOnADueTimeReadAfterTheLastMove(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, q, clk, deliveries := idleSender(t, t0)

	// An attempt failed: its retry is a minute on, and the deliveries
	// projection moves.
	q.schedule(t0.Add(time.Minute))
	deliveries.move()
	waitReturns(t, s, t0, "the projection moved")
	s.watch()
	s.lastScan = time.Now().Add(-scanEvery) // the scan the move prompts is not held back
	s.refill(t0, 1)
	if s.dirty || !s.nextStale || !s.noneDue {
		t.Fatalf("after the scan: dirty %v, next due stale %v, none due %v", s.dirty, s.nextStale, s.noneDue)
	}
	s.nextRead = time.Now() // its re-read is held back by the spacing

	now := t0.Add(time.Minute - time.Second)
	clk.set(now)
	waitReturns(t, s, now, "on a due time read before the retry was scheduled")
	if w := s.waitFor(now); w != time.Second {
		t.Fatalf("the sender sleeps %v, want the second left until the retry", w)
	}
}

// A move of the deliveries projection that lands after the sender's wait
// returned for something else (a worker freed up once the attempt's
// outcome was appended, before it was projected) and before the next
// pass is not lost: the next pass scans and re-reads the earliest due
// time, which the move changed (the retry it scheduled).
func TestSenderKeepsAMoveBetweenTwoPasses(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, q, _, deliveries := idleSender(t, t0)
	s.wake() // the attempt's worker freed up
	waitReturns(t, s, t0, "a worker freed up")
	if s.dirty || s.nextStale {
		t.Fatalf("nothing moved, yet dirty %v, next due stale %v", s.dirty, s.nextStale)
	}

	q.schedule(t0.Add(time.Minute)) // the outcome is projected now
	deliveries.move()
	s.watch() // the next pass
	s.refill(t0, 1)
	waitReturns(t, s, t0, "the move came between two passes")
	if !s.dirty || !s.nextStale {
		t.Fatalf("after the move: dirty %v, next due stale %v", s.dirty, s.nextStale)
	}
	s.watch()
	s.lastScan, s.nextRead = time.Now().Add(-scanEvery), time.Now().Add(-scanEvery) // past the spacing
	s.refill(t0, 1)
	if w := s.waitFor(t0); w != idleRescan || !s.nextOK || !s.nextDue.Equal(t0.Add(time.Minute)) {
		t.Fatalf("the sender sleeps %v with the next due time %v (known %v), want %v and the retry's time", w, s.nextDue, s.nextOK, idleRescan)
	}
}

// A move that comes with another wake (a freed worker) is seen whichever
// of them the wait's select picks.
func TestSenderWaitSeesAMoveThatCameWithAnotherWake(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, _, _, deliveries := idleSender(t, t0)
	// The select picks one ready case at random: enough rounds that a
	// missed move shows (2^-40 that it would not).
	for i := range 40 {
		s.dirty, s.nextStale = false, false
		s.watch()
		s.wake()
		deliveries.move()
		waitReturns(t, s, t0, "a worker freed up and the projection moved")
		if !s.dirty || !s.nextStale {
			t.Fatalf("round %d: after a wake with the projection moved: dirty %v, next due stale %v", i, s.dirty, s.nextStale)
		}
		select {
		case <-s.kick: // the wake the select left, if it took the move
		default:
		}
	}
}
