package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/lease"
	leasepg "github.com/healthtech/partner-open-platform/internal/lease/postgres"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// tracedStore is a migrated store whose pool counts its statements.
func tracedStore(t *testing.T, url string) (*leasepg.Store, *pgtest.Trace) {
	t.Helper()
	ctx := context.Background()
	pool, st := pgtest.TracedPool(t, url)
	if err := leasepg.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	s := leasepg.New(pool)
	t.Cleanup(func() { s.Close() })
	return s, st
}

// A holder reads its load right after each renewal (the balancer's
// hand-over check): the renewal statement reads it, so that read sends
// nothing, and it equals what a statement of its own reads.
func TestLoadAfterRenewalSendsNoStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.New(t)
	s, st := tracedStore(t, url)
	other, err := leasepg.Open(ctx, url) // reads loads with statements of its own
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	// A second node holding one lease: the load counts both nodes.
	peer, err := leasepg.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if _, err := peer.Acquire(ctx, "p", "node-2", time.Minute); err != nil {
		t.Fatal(err)
	}
	var held []lease.Lease
	for _, name := range []string{"a", "b", "c"} {
		l, err := s.Acquire(ctx, name, "node-1", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	want := lease.Load{Nodes: 2, Held: 3, Least: 1}
	if got, err := other.Load(ctx, "node-1"); err != nil || got != want {
		t.Fatalf("load read on its own = %+v, %v; want %+v", got, err, want)
	}

	var wg sync.WaitGroup
	for _, l := range held {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Renew(ctx, l, time.Minute); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	before := st.Count("pg_locks")
	got, err := s.Load(ctx, "node-1")
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("load after the renewal = %+v, want %+v", got, want)
	}
	if n := st.Count("pg_locks") - before; n != 0 {
		t.Fatalf("the load read after a renewal sent %d statements of its own, want 0 (it rides in the renewal)", n)
	}
	if got, err := s.Load(ctx, "node-2"); err != nil || got != (lease.Load{Nodes: 2, Held: 1, Least: 1}) {
		t.Fatalf("another holder's load = %+v, %v: it is read, not taken from this holder's renewal", got, err)
	}

	// Taking a lease changes the holder's count: the next load is read.
	if _, err := s.Acquire(ctx, "d", "node-1", time.Minute); err != nil {
		t.Fatal(err)
	}
	before = st.Count("pg_locks")
	got, err = s.Load(ctx, "node-1")
	if err != nil {
		t.Fatal(err)
	}
	if want := (lease.Load{Nodes: 2, Held: 4, Least: 1}); got != want {
		t.Fatalf("load after an acquisition = %+v, want %+v", got, want)
	}
	if n := st.Count("pg_locks") - before; n != 1 {
		t.Fatalf("the load read after an acquisition sent %d statements, want 1", n)
	}
}

// A lease renewed after its expiry passed (its holder alive, its renewal
// late) counts as held in the load the renewal reads, as it does in a
// load read after the renewal.
func TestRenewalLoadCountsALateRenewedLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.New(t)
	s, _ := tracedStore(t, url)
	l, err := s.Acquire(ctx, "a", "node-1", 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // expired, token still current
	if _, err := s.Renew(ctx, l, time.Minute); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx, "node-1")
	if err != nil {
		t.Fatal(err)
	}
	if want := (lease.Load{Nodes: 1, Held: 1, Least: 1}); got != want {
		t.Fatalf("load after a late renewal = %+v, want %+v", got, want)
	}
}
