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

// Cluster is one store shared by several nodes, each with its own handle
// (its own connection on Postgres), for the behaviours that depend on a
// node's process: its death frees its leases at once.
type Cluster interface {
	// Node returns a new node's handle on the shared store.
	Node(t *testing.T) lease.Store
	// Kill ends a node's handle as the death of its process would (its
	// connection closes); it does not release the node's leases itself.
	Kill(t *testing.T, s lease.Store)
}

// RunCluster checks what several nodes on one store observe; open returns a
// fresh, empty store for each subtest.
func RunCluster(t *testing.T, open func(t *testing.T) Cluster) {
	ctx := context.Background()
	// long is a time to live no subtest waits out: a lease that changes
	// hands within it did so because its holder died, not because it
	// expired. bound is the generous limit on such a takeover (the goal is
	// lease.Poll), never asserted closer.
	const long = 10 * time.Minute
	const bound = 5 * time.Second
	const short = 300 * time.Millisecond

	t.Run("a dead holder's lease is taken at once, with a larger token", func(t *testing.T) {
		c := open(t)
		a, b := c.Node(t), c.Node(t)
		la := mustAcquire(t, a, "job", "a", long)
		if _, err := b.Acquire(ctx, "job", "b", long); !errors.Is(err, lease.ErrHeld) {
			t.Fatalf("a live holder's lease was taken: %v", err)
		}
		cctx, cancel := context.WithTimeout(ctx, bound)
		defer cancel()
		won := make(chan *lease.Held, 1)
		go func() {
			h, err := lease.Campaign(cctx, b, "job", "b", long, nil)
			if err != nil {
				t.Errorf("campaign: %v", err)
			}
			won <- h
		}()
		time.Sleep(2 * lease.Poll)
		killed := time.Now()
		c.Kill(t, a)
		h := <-won
		if h == nil {
			t.Fatalf("no takeover within %v of the holder's death (ttl %v)", bound, long)
		}
		defer h.Release(ctx)
		t.Logf("takeover %v after the holder's death", time.Since(killed).Round(time.Millisecond))
		if l := h.Lease(); l.Token <= la.Token || l.Holder != "b" {
			t.Fatalf("takeover %+v after %+v", l, la)
		}
		if err := b.Check(ctx, la); !errors.Is(err, lease.ErrLost) {
			t.Fatalf("Check of the dead holder's lease: %v, want ErrLost", err)
		}
		if got, _ := b.Get(ctx, "job"); got.Holder != "b" {
			t.Fatalf("Get after takeover = %+v", got)
		}
		// The dead node's identity coming back on a new process takes
		// nothing from the live holder.
		back := c.Node(t)
		if _, err := back.Acquire(ctx, "job", "a", long); !errors.Is(err, lease.ErrHeld) {
			t.Fatalf("the returning node took the live holder's lease: %v", err)
		}
	})

	t.Run("a dead holder reads as free", func(t *testing.T) {
		c := open(t)
		a, b := c.Node(t), c.Node(t)
		mustAcquire(t, a, "job", "a", long)
		c.Kill(t, a)
		// The database notices a closed connection a moment later.
		deadline := time.Now().Add(bound)
		for {
			got, err := b.Get(ctx, "job")
			if err == nil && got.Holder == "" {
				break
			}
			if err != nil || time.Now().After(deadline) {
				t.Fatalf("Get of a dead holder's lease = %+v, %v; want free", got, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	t.Run("a silent holder's lease lapses by its ttl, and its death then takes nothing from the new holder", func(t *testing.T) {
		c := open(t)
		a, b, x := c.Node(t), c.Node(t), c.Node(t)
		mustAcquire(t, a, "job", "a", short) // a stays alive and never renews
		lb := acquireWithin(t, b, "job", "b", long, 50*short)
		if _, err := x.Acquire(ctx, "job", "x", long); !errors.Is(err, lease.ErrHeld) {
			t.Fatalf("a third node took the new holder's lease: %v", err)
		}
		c.Kill(t, a)
		if _, err := x.Acquire(ctx, "job", "x", long); !errors.Is(err, lease.ErrHeld) {
			t.Fatalf("the silent holder's death handed the new holder's lease over: %v", err)
		}
		// b renews as a holder does (the database frees the dead
		// holder's session a moment after its death).
		for range 20 {
			var err error
			if lb, err = b.Renew(ctx, lb, long); err != nil {
				t.Fatalf("renew: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if _, err := x.Acquire(ctx, "job", "x", long); !errors.Is(err, lease.ErrHeld) {
			t.Fatalf("the renewed lease was taken: %v", err)
		}
		// Renewed after the silent holder died, b's lease now ends with b.
		c.Kill(t, b)
		lx := acquireWithin(t, x, "job", "x", long, bound)
		if lx.Token <= lb.Token {
			t.Fatalf("token %d after %d", lx.Token, lb.Token)
		}
	})

	t.Run("leases spread over the nodes", func(t *testing.T) {
		c := open(t)
		names := []string{"j0", "j1", "j2", "j3", "j4", "j5"}
		cctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer func() { cancel(); wg.Wait() }()
		// The first node is up alone and takes every lease.
		nodes := []lease.Store{c.Node(t)}
		campaignAll(cctx, &wg, nodes[0], "n0", names, short)
		waitSpread(t, nodes[0], names, func(by map[string]int) bool { return by["n0"] == len(names) }, 50*short)
		// Two more join: the leases spread until no node holds two more
		// than another, and none is left free.
		for i := 1; i < 3; i++ {
			nodes = append(nodes, c.Node(t))
			campaignAll(cctx, &wg, nodes[i], fmt.Sprintf("n%d", i), names, short)
		}
		waitSpread(t, nodes[0], names, func(by map[string]int) bool {
			return by[""] == 0 && by["n0"] > 0 && by["n1"] > 0 && by["n2"] > 0 &&
				max(by["n0"], by["n1"], by["n2"])-min(by["n0"], by["n1"], by["n2"]) <= 1
		}, 200*short)
		// One dies: its leases go to the two others at once.
		c.Kill(t, nodes[2])
		waitSpread(t, nodes[0], names, func(by map[string]int) bool {
			return by[""] == 0 && by["n2"] == 0 && by["n0"] > 0 && by["n1"] > 0
		}, bound)
	})
}

// campaignAll runs, for each name, the loop a node runs for its work:
// campaign, hold until lost, release, campaign again.
func campaignAll(ctx context.Context, wg *sync.WaitGroup, s lease.Store, holder string, names []string, ttl time.Duration) {
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				h, err := lease.Campaign(ctx, s, name, holder, ttl, nil)
				if err != nil {
					return
				}
				select {
				case <-h.Lost():
				case <-ctx.Done():
				}
				_ = h.Release(context.Background())
				if ctx.Err() != nil {
					return
				}
			}
		}()
	}
}

// waitSpread waits until ok holds for the count of leases per holder ("" for
// free ones), failing with the last counts after limit.
func waitSpread(t *testing.T, s lease.Store, names []string, ok func(map[string]int) bool, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		by := map[string]int{}
		for _, name := range names {
			l, err := s.Get(context.Background(), name)
			if err != nil {
				t.Fatal(err)
			}
			by[l.Holder]++
		}
		if ok(by) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("leases per holder after %v: %v", limit, by)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
