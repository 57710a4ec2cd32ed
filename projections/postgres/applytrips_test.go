package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/lease"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/projections"
)

// A read model's apply that only writes is one round trip: BEGIN, the
// writes, the checkpoint and COMMIT in one pipeline. An apply that reads
// first (a PATCH's apply reads its user) sends its queued BEGIN in the
// read's round trip, then its writes with the COMMIT: two. The read runs
// inside the transaction, so a failure after it still leaves nothing
// written, and a row it does not find is its answer, not a failed
// transaction.
func TestAnApplyIsOnePipeline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, trips := pgtest.TracedPool(t, MigratedDB(t))
	s := &Store{pool: pool}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	user := func(id int64) projections.User {
		return projections.User{AppID: 1, OpenUserID: id, ChannelUserID: "c" + string(rune('0'+id)), Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at}
	}
	if err := s.Update(ctx, "users", events.Position{Commit: 1, Prepare: 1}, func(tx projections.UserTx) error {
		return nil
	}); err != nil { // the pool's first connection, outside the count
		t.Fatal(err)
	}

	trips.Reset()
	if err := s.Update(ctx, "users", events.Position{Commit: 2, Prepare: 2}, func(tx projections.UserTx) error {
		return tx.PutUser(ctx, user(1))
	}); err != nil {
		t.Fatal(err)
	}
	if n, open := trips.RoundTrips(), trips.Alone(); n != 1 || len(open) != 0 {
		t.Fatalf("a write-only apply took %d round trips, statements alone %q; want 1: the pipeline ending with COMMIT", n, open)
	}
	if u, err := s.User(ctx, 1, 1); err != nil || u.ChannelUserID != "c1" {
		t.Fatalf("user 1 after its apply: %+v, %v", u, err)
	}

	trips.Reset()
	if err := s.Update(ctx, "users", events.Position{Commit: 3, Prepare: 3}, func(tx projections.UserTx) error {
		if _, err := tx.User(ctx, 9); !errors.Is(err, projections.ErrNotFound) {
			t.Errorf("a user never written, read in the apply: %v, want not found", err)
		}
		u, err := tx.User(ctx, 1)
		if err != nil {
			return err
		}
		u.Name = "patched"
		return tx.PutUser(ctx, u)
	}); err != nil {
		t.Fatal(err)
	}
	if n := trips.RoundTrips(); n != 3 {
		t.Fatalf("an apply reading twice, then writing, took %d round trips; want 3: BEGIN with the first read, the second read, the writes with COMMIT", n)
	}
	if u, err := s.User(ctx, 1, 1); err != nil || u.Name != "patched" {
		t.Fatalf("user 1 after its patch: %+v, %v", u, err)
	}

	failed := errors.New("the apply fails after its read")
	err := s.Update(ctx, "users", events.Position{Commit: 4, Prepare: 4}, func(tx projections.UserTx) error {
		if err := tx.PutUser(ctx, user(2)); err != nil {
			return err
		}
		if err := tx.PutGroup(ctx, projections.Group{AppID: 1, OpenUserID: 2, FamilyGroupID: 20, AppGroupID: 1, Name: "g", CreatedAt: at, UpdatedAt: at}); err != nil {
			return err
		}
		g, err := tx.Group(ctx, 20) // sends BEGIN and the writes, then reads
		if err != nil || g.Name != "g" {
			t.Errorf("the group read in its transaction: %+v, %v", g, err)
		}
		return failed
	})
	if !errors.Is(err, failed) {
		t.Fatalf("update: %v, want its function's error", err)
	}
	if _, err := s.User(ctx, 1, 2); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("user 2 of a failed apply: %v, want not found (rolled back)", err)
	}
	if pos, err := s.Checkpoint(ctx, "users"); err != nil || pos.Commit != 3 {
		t.Fatalf("checkpoint after a failed apply: %v, %v; want 3", pos, err)
	}
}

// A fenced apply is one round trip as well, its COMMIT queued behind the
// fence and the checkpoint: so both fail on the server when they do not
// hold. Under a lease no longer current the apply fails with ErrLost, and
// moving the checkpoint back fails with ErrCheckpointBackwards; either way
// none of its rows is written and the checkpoint stays.
func TestAFailedFenceOrCheckpointCommitsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, trips := pgtest.TracedPool(t, MigratedDB(t))
	s := &Store{pool: pool, fenceIdle: time.Minute}
	if _, err := pool.Exec(ctx, `INSERT INTO leases (name, holder, token, expires_at) VALUES ('users', 'a', 7, now() + interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	live := lease.Lease{Name: "users", Holder: "a", Token: 7}
	stale := lease.Lease{Name: "users", Holder: "a", Token: 6}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	put := func(id int64) func(projections.UserTx) error {
		return func(tx projections.UserTx) error {
			return tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: id, ChannelUserID: "c" + string(rune('0'+id)), Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at})
		}
	}
	at3 := events.Position{Commit: 3, Prepare: 3}
	if err := s.Update(lease.WithFence(ctx, live), "users", events.Position{Commit: 2, Prepare: 2}, put(1)); err != nil {
		t.Fatal(err) // the pool's first connection, outside the count
	}
	trips.Reset()
	if err := s.Update(lease.WithFence(ctx, live), "users", at3, put(2)); err != nil {
		t.Fatal(err)
	}
	if n, open := trips.RoundTrips(), trips.Alone(); n != 1 || len(open) != 0 {
		t.Fatalf("a fenced write-only apply took %d round trips, statements alone %q; want 1", n, open)
	}

	if err := s.Update(lease.WithFence(ctx, stale), "users", events.Position{Commit: 4, Prepare: 4}, put(3)); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("an apply under a token no longer current: %v, want ErrLost", err)
	}
	if err := s.Update(lease.WithFence(ctx, live), "users", events.Position{Commit: 1, Prepare: 1}, put(4)); !errors.Is(err, subscribe.ErrCheckpointBackwards) {
		t.Fatalf("an apply moving the checkpoint back: %v, want ErrCheckpointBackwards", err)
	}
	for _, id := range []int64{3, 4} {
		if _, err := s.User(ctx, 1, id); !errors.Is(err, projections.ErrNotFound) {
			t.Errorf("user %d of a refused apply: %v, want not found (rolled back)", id, err)
		}
	}
	if pos, err := s.Checkpoint(ctx, "users"); err != nil || pos != at3 {
		t.Fatalf("checkpoint after the refused applies: %v, %v; want %v", pos, err, at3)
	}
	if err := s.Update(lease.WithFence(ctx, live), "users", events.Position{Commit: 5, Prepare: 5}, put(5)); err != nil {
		t.Fatalf("an apply after the refused ones: %v", err)
	}
}
