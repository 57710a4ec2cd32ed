package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/lease"
	leasepg "github.com/healthtech/partner-open-platform/internal/lease/postgres"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/relay"
	"github.com/healthtech/partner-open-platform/relay/checkpointtest"
	"github.com/healthtech/partner-open-platform/relay/postgres"
)

func open(t *testing.T, db string) *postgres.Checkpoints {
	t.Helper()
	cp, err := postgres.Open(context.Background(), db, "feed")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cp.Close() })
	return cp
}

func leases(t *testing.T, db string) *leasepg.Store {
	t.Helper()
	s, err := leasepg.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) (relay.Checkpoints, relay.Checkpoints, context.Context) {
		db := pgtest.New(t)
		cp, again := open(t, db), open(t, db)
		l, err := leases(t, db).Acquire(context.Background(), "relay", "node-a", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return cp, again, lease.WithFence(context.Background(), l)
	})
}

// TestSaveIsFencedOnTheRelayLease: a relay that lost its lease (a paused
// old owner waking up) cannot move the checkpoint, not even forward, and a
// save outside any lease is refused; the new owner's saves go through.
func TestSaveIsFencedOnTheRelayLease(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	cp, ls := open(t, db), leases(t, db)
	if err := cp.Save(ctx, events.Position{Commit: 1, Prepare: 1}); !errors.Is(err, postgres.ErrUnfenced) {
		t.Fatalf("save without a lease: %v, want ErrUnfenced", err)
	}
	old, err := ls.Acquire(ctx, "relay", "node-a", 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.Save(lease.WithFence(ctx, old), events.Position{Commit: 5, Prepare: 5}); err != nil {
		t.Fatalf("save under the current lease: %v", err)
	}
	var taken lease.Lease
	for range 500 { // node-a pauses; its lease lapses and node-b takes it
		if taken, err = ls.Acquire(ctx, "relay", "node-b", time.Minute); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("node-b never took the lapsed lease: %v", err)
	}
	if err := cp.Save(lease.WithFence(ctx, old), events.Position{Commit: 9, Prepare: 9}); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("the old owner's save after losing the lease: %v, want ErrLost", err)
	}
	if got, _ := cp.Load(ctx); got != (events.Position{Commit: 5, Prepare: 5}) {
		t.Fatalf("checkpoint %s after a fenced-out save, want 5/5", got)
	}
	if err := cp.Save(lease.WithFence(ctx, taken), events.Position{Commit: 7, Prepare: 7}); err != nil {
		t.Fatalf("the new owner's save: %v", err)
	}
	if got, _ := cp.Load(ctx); got != (events.Position{Commit: 7, Prepare: 7}) {
		t.Fatalf("checkpoint %s after the new owner saved, want 7/7", got)
	}
}
