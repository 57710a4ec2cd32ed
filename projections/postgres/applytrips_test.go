package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/projections"
)

// A read model's apply that only writes is two round trips: BEGIN, the
// writes and the checkpoint in one pipeline, then COMMIT. An apply that
// reads first (a PATCH's apply reads its user) sends its queued BEGIN in
// the read's round trip: three. The read runs inside the transaction, so
// a failure after it still leaves nothing written, and a row it does not
// find is its answer, not a failed transaction.
func TestAnApplyIsOnePipelineAndItsCommit(t *testing.T) {
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
	if n, open := trips.RoundTrips(), trips.Alone(); n != 2 || len(open) != 1 || open[0] != "COMMIT" {
		t.Fatalf("a write-only apply took %d round trips, statements alone %q; want 2: the pipeline, then COMMIT", n, open)
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
	if n := trips.RoundTrips(); n != 4 {
		t.Fatalf("an apply reading twice, then writing, took %d round trips; want 4: BEGIN with the first read, the second read, the writes, COMMIT", n)
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
