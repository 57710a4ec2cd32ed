// Package tail gives the embedded adapters one subscription implementation:
// a cursor that catches up through ReadAll in pages and then sleeps on an
// in-process broadcast until the next append, so no adapter polls.
package tail

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/healthtech/partner-open-platform/events"
)

// PageSize bounds how many events a subscription holds in memory at a time.
const PageSize = 256

// Notifier wakes every waiting subscription after an append, by closing the
// channel they wait on and handing out a fresh one.
type Notifier struct {
	mu     sync.Mutex
	ch     chan struct{}
	closed atomic.Bool
}

// NewNotifier returns a notifier ready for waiters.
func NewNotifier() *Notifier { return &Notifier{ch: make(chan struct{})} }

// Wait returns a channel closed by the next Notify (or by Close). Take it
// before reading the log so an append that lands after the read is not missed.
func (n *Notifier) Wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ch
}

// Notify wakes everyone waiting; call it after an append became visible.
func (n *Notifier) Notify() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed.Load() {
		return
	}
	close(n.ch)
	n.ch = make(chan struct{})
}

// Close wakes everyone for good: the store is going away.
func (n *Notifier) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.closed.Load() {
		n.closed.Store(true)
		close(n.ch)
	}
}

// ReadFunc reads up to limit events strictly after a position, like
// Store.ReadAll; the subscription only reads the slice returned, so it may
// be shared with other subscriptions.
type ReadFunc func(ctx context.Context, after events.Position, limit int) ([]events.Recorded, error)

// Subscription is the events.Subscription of the embedded adapters.
type Subscription struct {
	read     ReadFunc
	notifier *Notifier
	ctx      context.Context // the SubscribeAll context: the subscription's lifetime
	stop     context.CancelCauseFunc

	after events.Position
	buf   []events.Recorded
	// exact: read returns less than limit only at the log's end as of the
	// read (SubscribeExact).
	exact bool
	// caughtUp, once buf is drained, is what to wait on before reading
	// again (exact reads only): the wake channel taken before a read that
	// returned less than a page, i.e. the log's end as of that read.
	// Reading again at once would find nothing unless an append woke it
	// meanwhile, and that empty read was half of every follower's reads
	// on Postgres.
	caughtUp <-chan struct{}
}

var _ events.Poller = (*Subscription)(nil)

// Subscribe starts a subscription strictly after pos that lives until ctx
// ends or Close is called; read must return events.ErrClosed once the store
// is closed, which ends the subscription too.
func Subscribe(ctx context.Context, after events.Position, read ReadFunc, n *Notifier) *Subscription {
	ctx, stop := context.WithCancelCause(ctx)
	return &Subscription{read: read, notifier: n, ctx: ctx, stop: stop, after: after}
}

// SubscribeExact is Subscribe for a read that returns fewer events than
// its limit only when it reached the log's end: after such a short page
// the subscription waits for the next append instead of reading again.
func SubscribeExact(ctx context.Context, after events.Position, read ReadFunc, n *Notifier) *Subscription {
	s := Subscribe(ctx, after, read, n)
	s.exact = true
	return s
}

// Next returns the next event in global order, blocking until there is one.
func (s *Subscription) Next(ctx context.Context) (events.Recorded, error) {
	for {
		ev, wake, err := s.TryNext(ctx)
		if err != nil || wake == nil {
			return ev, err
		}
		select {
		case <-wake:
		case <-ctx.Done():
		case <-s.ctx.Done():
		}
	}
}

// Buffered is what the subscription read and has not handed out yet, in
// order, for a consumer that prepares for what comes (privacy loads the
// keys a page needs in one read); it is only read, never written.
func (s *Subscription) Buffered() []events.Recorded { return s.buf }

// alive says why Next must stop, if it must: closing (the subscription or
// the store) wins over the contexts, and buffered events die with the store.
func (s *Subscription) alive(ctx context.Context) error {
	if s.notifier.closed.Load() {
		return events.ErrClosed
	}
	if err := s.ctx.Err(); err != nil {
		if errors.Is(context.Cause(s.ctx), events.ErrClosed) {
			return events.ErrClosed
		}
		return err
	}
	return ctx.Err()
}

// Close ends the subscription; a blocked or later Next returns events.ErrClosed.
func (s *Subscription) Close() error {
	s.stop(events.ErrClosed)
	return nil
}

// TryNext is Next without the wait: when no event is to be had it returns
// the channel to wait on before trying again (closed by the next append or
// by the store's Close) and a nil error. A follower that waits on other
// channels too (events/subscribe's runner) reads the subscription itself
// this way, instead of through a goroutine that blocks in Next and hands
// each event over: every append wakes every follower, and such a hand-off
// would be a third of the goroutine wake-ups of a write that commits alone.
func (s *Subscription) TryNext(ctx context.Context) (events.Recorded, <-chan struct{}, error) {
	for {
		if err := s.alive(ctx); err != nil {
			return events.Recorded{}, nil, err
		}
		if len(s.buf) > 0 {
			// The page may be shared with other subscriptions (events/bolt):
			// it is only read, never cleared.
			ev := s.buf[0]
			s.buf = s.buf[1:]
			s.after = ev.Position
			return ev, nil, nil
		}
		if w := s.caughtUp; w != nil {
			select {
			case <-w:
				s.caughtUp = nil
				continue
			default:
				return events.Recorded{}, w, nil
			}
		}
		wake := s.notifier.Wait()
		page, err := s.read(ctx, s.after, PageSize)
		if err != nil {
			if aliveErr := s.alive(ctx); aliveErr != nil {
				return events.Recorded{}, nil, aliveErr
			}
			return events.Recorded{}, nil, err
		}
		if len(page) == 0 {
			return events.Recorded{}, wake, nil
		}
		s.buf = page
		if s.exact && len(page) < PageSize {
			s.caughtUp = wake
		}
	}
}
