// Package leasetest is the one conformance suite of lease.Store: every
// adapter runs it, so the relay, the dispatcher and the projections can
// rely on the same guarantees whichever store keeps their leases.
package leasetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/lease"
)

// Run checks an adapter; open returns a fresh, empty store for each subtest.
func Run(t *testing.T, open func(t *testing.T) lease.Store) {
	ctx := context.Background()
	const long = time.Minute
	// short is a time to live the subtests wait out; waits are bounded
	// loops, and no timing is asserted.
	const short = 300 * time.Millisecond

	t.Run("exclusive", func(t *testing.T) {
		s := open(t)
		a := mustAcquire(t, s, "job", "a", long)
		if _, err := s.Acquire(ctx, "job", "b", long); !errors.Is(err, lease.ErrHeld) {
			t.Fatalf("second holder acquired a live lease: err %v, want ErrHeld", err)
		}
		got, err := s.Get(ctx, "job")
		if err != nil || got.Holder != "a" || got.Token != a.Token {
			t.Fatalf("Get = %+v, %v; want holder a token %d", got, err, a.Token)
		}
		if err := s.Check(ctx, a); err != nil {
			t.Fatalf("Check of the live lease: %v", err)
		}
		other := mustAcquire(t, s, "other", "b", long) // names are independent
		if other.Holder != "b" {
			t.Fatalf("other lease %+v", other)
		}
	})

	t.Run("free lease reads as free", func(t *testing.T) {
		s := open(t)
		got, err := s.Get(ctx, "never")
		if err != nil || got.Holder != "" || got.Name != "never" {
			t.Fatalf("Get of a lease never taken = %+v, %v", got, err)
		}
	})

	t.Run("takeover after expiry with a larger token", func(t *testing.T) {
		s := open(t)
		a := mustAcquire(t, s, "job", "a", short)
		b := acquireWithin(t, s, "job", "b", long, 50*short)
		if b.Token <= a.Token {
			t.Fatalf("takeover token %d not above %d", b.Token, a.Token)
		}
		if err := s.Check(ctx, a); !errors.Is(err, lease.ErrLost) {
			t.Fatalf("Check of the taken-over lease: %v, want ErrLost", err)
		}
		if _, err := s.Renew(ctx, a, long); !errors.Is(err, lease.ErrLost) {
			t.Fatalf("Renew after losing the lease: %v, want ErrLost", err)
		}
		if got, _ := s.Get(ctx, "job"); got.Holder != "b" || got.Token != b.Token {
			t.Fatalf("after takeover Get = %+v, want b", got)
		}
	})

	t.Run("tokens only increase", func(t *testing.T) {
		s := open(t)
		var last int64
		for i := range 5 {
			l := mustAcquire(t, s, "job", fmt.Sprintf("h%d", i), long)
			if l.Token <= last {
				t.Fatalf("acquisition %d got token %d after %d", i, l.Token, last)
			}
			last = l.Token
			if err := s.Release(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("reacquiring by the same holder fences the earlier acquisition", func(t *testing.T) {
		s := open(t)
		first := mustAcquire(t, s, "job", "a", long)
		again := mustAcquire(t, s, "job", "a", long)
		if again.Token <= first.Token {
			t.Fatalf("reacquired token %d not above %d", again.Token, first.Token)
		}
		if _, err := s.Renew(ctx, first, long); !errors.Is(err, lease.ErrLost) {
			t.Fatalf("Renew of the earlier acquisition: %v, want ErrLost", err)
		}
		if _, err := s.Renew(ctx, again, long); err != nil {
			t.Fatalf("Renew of the current acquisition: %v", err)
		}
	})

	t.Run("renew keeps the token and extends", func(t *testing.T) {
		s := open(t)
		a := mustAcquire(t, s, "job", "a", short)
		deadline := time.Now().Add(4 * short)
		for time.Now().Before(deadline) {
			r, err := s.Renew(ctx, a, short)
			if err != nil {
				t.Fatalf("renew: %v", err)
			}
			if r.Token != a.Token {
				t.Fatalf("renew changed the token %d -> %d", a.Token, r.Token)
			}
			if _, err := s.Acquire(ctx, "job", "b", short); !errors.Is(err, lease.ErrHeld) {
				t.Fatalf("a renewed lease was taken: %v", err)
			}
			time.Sleep(short / 5)
		}
	})

	t.Run("release lets another holder in at once and is idempotent", func(t *testing.T) {
		s := open(t)
		a := mustAcquire(t, s, "job", "a", long)
		if err := s.Release(ctx, a); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, a); err != nil {
			t.Fatalf("second release: %v", err)
		}
		if got, _ := s.Get(ctx, "job"); got.Holder != "" {
			t.Fatalf("released lease still held by %q", got.Holder)
		}
		b := mustAcquire(t, s, "job", "b", long)
		if err := s.Release(ctx, a); err != nil { // a stale release must not free b's lease
			t.Fatal(err)
		}
		if err := s.Check(ctx, b); err != nil {
			t.Fatalf("stale release freed the new holder's lease: %v", err)
		}
		if _, err := s.Renew(ctx, a, long); !errors.Is(err, lease.ErrLost) {
			t.Fatalf("Renew after release: %v, want ErrLost", err)
		}
	})

	t.Run("concurrent acquirers get one winner", func(t *testing.T) {
		s := open(t)
		for round := range 5 {
			name := fmt.Sprintf("job-%d", round)
			var wg sync.WaitGroup
			var mu sync.Mutex
			var winners []lease.Lease
			for i := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					l, err := s.Acquire(ctx, name, fmt.Sprintf("h%d", i), long)
					if err != nil {
						if !errors.Is(err, lease.ErrHeld) {
							t.Errorf("acquire: %v", err)
						}
						return
					}
					mu.Lock()
					winners = append(winners, l)
					mu.Unlock()
				}()
			}
			wg.Wait()
			if len(winners) != 1 {
				t.Fatalf("round %d: %d winners %+v, want 1", round, len(winners), winners)
			}
		}
	})

	t.Run("held lease outlives its ttl and is released", func(t *testing.T) {
		s := open(t)
		a := mustAcquire(t, s, "job", "a", short)
		h := lease.Hold(ctx, s, a, short, nil)
		if fl, ok := lease.FenceFrom(h.Context()); !ok || fl.Token != a.Token {
			t.Fatalf("held context carries %+v, %v", fl, ok)
		}
		time.Sleep(3 * short)
		if h.Err() != nil {
			t.Fatalf("held lease ended: %v", h.Err())
		}
		if _, err := s.Acquire(ctx, "job", "b", short); !errors.Is(err, lease.ErrHeld) {
			t.Fatalf("a held lease was taken after its ttl: %v", err)
		}
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(h.Err(), lease.ErrLost) {
			t.Fatalf("after release Err = %v", h.Err())
		}
		mustAcquire(t, s, "job", "b", short)
	})

	t.Run("held lease reports its loss", func(t *testing.T) {
		s := open(t)
		a := mustAcquire(t, s, "job", "a", short)
		h := lease.Hold(ctx, s, a, short, nil)
		defer h.Release(ctx)
		mustAcquire(t, s, "job", "a", short) // a restart of the same node takes it back
		select {
		case <-h.Lost():
		case <-time.After(50 * short):
			t.Fatal("loss not reported")
		}
		if !errors.Is(h.Err(), lease.ErrLost) {
			t.Fatalf("Err = %v, want ErrLost", h.Err())
		}
	})

	t.Run("campaign waits for the holder and takes over", func(t *testing.T) {
		s := open(t)
		a := mustAcquire(t, s, "job", "a", long)
		got := make(chan *lease.Held, 1)
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		go func() {
			h, err := lease.Campaign(cctx, s, "job", "b", short, nil)
			if err != nil {
				t.Errorf("campaign: %v", err)
			}
			got <- h
		}()
		time.Sleep(short)
		if cur, _ := s.Get(ctx, "job"); cur.Holder != "a" {
			t.Fatalf("campaign took a live lease: %+v", cur)
		}
		if err := s.Release(ctx, a); err != nil {
			t.Fatal(err)
		}
		h := <-got
		if h == nil {
			return
		}
		defer h.Release(ctx)
		if l := h.Lease(); l.Holder != "b" || l.Token <= a.Token {
			t.Fatalf("campaign won %+v", l)
		}
	})

	t.Run("campaign ends with its context", func(t *testing.T) {
		s := open(t)
		mustAcquire(t, s, "job", "a", long)
		cctx, cancel := context.WithTimeout(ctx, 2*short)
		defer cancel()
		if h, err := lease.Campaign(cctx, s, "job", "b", short, nil); err == nil {
			t.Fatalf("campaign won a live lease: %+v", h.Lease())
		}
	})
}

func mustAcquire(t *testing.T, s lease.Store, name, holder string, ttl time.Duration) lease.Lease {
	t.Helper()
	l, err := s.Acquire(context.Background(), name, holder, ttl)
	if err != nil {
		t.Fatalf("acquire %s for %s: %v", name, holder, err)
	}
	if l.Name != name || l.Holder != holder || l.Token <= 0 {
		t.Fatalf("acquired %+v", l)
	}
	return l
}

// acquireWithin retries until holder gets name, failing after limit.
func acquireWithin(t *testing.T, s lease.Store, name, holder string, ttl, limit time.Duration) lease.Lease {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		l, err := s.Acquire(context.Background(), name, holder, ttl)
		if err == nil {
			return l
		}
		if !errors.Is(err, lease.ErrHeld) || time.Now().After(deadline) {
			t.Fatalf("acquire %s for %s: %v", name, holder, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
