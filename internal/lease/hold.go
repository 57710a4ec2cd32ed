package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Held is a lease kept alive in the background: it renews every TTL/3 and,
// the moment the lease is lost (another holder's token is newer, or no
// renewal succeeded within the TTL), cancels its Context, so the work done
// under it stops at once.
type Held struct {
	store Store
	ttl   time.Duration
	log   *slog.Logger

	mu    sync.Mutex
	lease Lease

	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// Hold keeps l (just acquired from s with ttl) until ctx ends, Release is
// called, or the lease is lost. log may be nil.
func Hold(ctx context.Context, s Store, l Lease, ttl time.Duration, log *slog.Logger) *Held {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hctx, cancel := context.WithCancelCause(ctx)
	h := &Held{store: s, ttl: ttl, log: log.With("lease", l.Name, "token", l.Token), lease: l, ctx: WithFence(hctx, l), cancel: cancel, done: make(chan struct{})}
	go h.renew()
	return h
}

// Lease is the lease as last renewed.
func (h *Held) Lease() Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lease
}

// Context ends when the lease is lost or released; it carries the lease
// for fencing (FenceFrom), so writes made with it are refused once lost.
func (h *Held) Context() context.Context { return h.ctx }

// Lost is closed when the lease is lost or released.
func (h *Held) Lost() <-chan struct{} { return h.ctx.Done() }

// Err says why the lease ended: an error wrapping ErrLost, the parent
// context's error, or nil while it is held.
func (h *Held) Err() error {
	if h.ctx.Err() == nil {
		return nil
	}
	return context.Cause(h.ctx)
}

// Release stops renewing and gives the lease up, so another node takes over
// without waiting for the TTL.
func (h *Held) Release(ctx context.Context) error {
	h.cancel(fmt.Errorf("%w: released", ErrLost))
	<-h.done
	err := h.store.Release(ctx, h.Lease())
	if err != nil {
		return fmt.Errorf("release lease %s: %w", h.lease.Name, err)
	}
	return nil
}

func (h *Held) renew() {
	defer close(h.done)
	defer forgetLoad(h.store, h.Lease().Holder)
	every := max(h.ttl/3, time.Millisecond)
	since := time.Now()
	// deadline is when the lease lapses if no renewal succeeds: counted
	// from before each renewal was sent, so it is never later than the
	// store's own expiry.
	deadline := time.Now().Add(h.ttl)
	t := time.NewTimer(onGrid(every))
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
		}
		sent := time.Now()
		rctx, cancel := context.WithDeadline(h.ctx, deadline)
		l, err := h.store.Renew(rctx, h.Lease(), h.ttl)
		cancel()
		switch {
		case err == nil:
			h.mu.Lock()
			h.lease = l
			h.mu.Unlock()
			deadline = sent.Add(h.ttl)
			if shouldHandOver(h.ctx, h.store, l.Holder, since, h.ttl) {
				// Released by whoever waits on Lost (Release is idempotent).
				h.log.Info("handing the lease over to a less loaded node")
				h.cancel(fmt.Errorf("%w: handed over to a less loaded node", ErrLost))
				rctx, cancel := context.WithTimeout(context.WithoutCancel(h.ctx), h.ttl)
				if err := h.store.Release(rctx, l); err != nil {
					h.log.Warn("releasing the handed-over lease failed; it lapses by itself", "err", err)
				}
				cancel()
				return
			}
			t.Reset(onGrid(every))
		case errors.Is(err, ErrLost):
			h.log.Warn("lease lost", "err", err)
			h.cancel(err)
			return
		case h.ctx.Err() != nil:
			return
		case !time.Now().Before(deadline):
			h.log.Warn("lease lapsed: no renewal succeeded within its time to live", "err", err)
			h.cancel(fmt.Errorf("%w: no renewal succeeded within %s: %v", ErrLost, h.ttl, err))
			return
		default:
			h.log.Warn("lease renewal failed; retrying", "err", err)
			t.Reset(min(every/4+time.Millisecond, time.Until(deadline)))
		}
	}
}

// Campaign acquires name for holder, trying again every Poll (or TTL/3 if
// shorter) while another holder has it, and returns it held in the
// background; it fails only when ctx ends. Stores that fail (not ErrHeld)
// are retried too, and logged. On a Balancer, a holder that holds more
// leases than another node lets a few polls pass first (see deferral).
func Campaign(ctx context.Context, s Store, name, holder string, ttl time.Duration, log *slog.Logger) (*Held, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	every := max(min(ttl/3, Poll), time.Millisecond)
	free := 0 // polls the lease has been seen free while deferring
	for {
		take := true
		if wait := deferral(ctx, s, holder); wait > 0 {
			if cur, err := s.Get(ctx, name); err == nil && cur.Holder == "" {
				free++
			} else {
				free = 0
			}
			take = free > wait
		}
		if take {
			l, err := s.Acquire(ctx, name, holder, ttl)
			if err == nil {
				forgetLoad(s, holder)
				return Hold(ctx, s, l, ttl, log), nil
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if !errors.Is(err, ErrHeld) {
				log.Warn("lease acquisition failed; retrying", "lease", name, "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(every):
		}
	}
}

// RunHeld runs run on holder's node only while it holds the lease name,
// so that of all the nodes sharing s exactly one runs it: it campaigns,
// runs under the held lease's context (which ends the moment the lease is
// lost and carries it for fencing), releases the lease when run returns so
// another node takes over at once, and campaigns again after a lost lease.
// It returns nil once ctx ends, and run's error when run failed while the
// lease held (released first, so a healthy node can take over; the caller
// retries after its backoff). A node that dies holding the lease is
// replaced within ttl.
func RunHeld(ctx context.Context, s Store, name, holder string, ttl time.Duration, log *slog.Logger, run func(context.Context) error) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for {
		held, err := Campaign(ctx, s, name, holder, ttl, log)
		if err != nil {
			return nil // ctx ended while standing by
		}
		log.Info("lease acquired: running on this node", "token", held.Lease().Token)
		err = run(held.Context())
		lost := held.Err()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if rerr := held.Release(rctx); rerr != nil && ctx.Err() == nil {
			log.Warn("release lease; it lapses by itself", "err", rerr)
		}
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case lost != nil:
			log.Warn("lease lost: standing by", "cause", lost)
		case err != nil:
			return err
		}
	}
}

// onGrid is how long until the next multiple of every since the epoch,
// at most every: a node's leases of one time to live renew at the same
// moments, so a store can renew them in one statement (lease/postgres
// does), and no renewal comes later than every after the previous one.
func onGrid(every time.Duration) time.Duration {
	return every - time.Duration(time.Now().UnixNano()%int64(every))
}
