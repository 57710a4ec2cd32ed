package memory_test

import (
	"context"
	"errors"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory"
	"github.com/healthtech/partner-open-platform/projections/storetest"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) projections.Store { return memory.New() })
}

// A write that would give two users the same channel id fails the whole
// Update and undoes the writes before it, as the Postgres unique index does.
func TestChannelConflictUndoes(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	a := projections.User{AppID: 1, OpenUserID: 1, ChannelUserID: "c"}
	if err := s.Update(ctx, "p", events.Position{Commit: 1}, func(tx projections.Tx) error {
		return tx.PutUser(ctx, a)
	}); err != nil {
		t.Fatal(err)
	}
	err := s.Update(ctx, "p", events.Position{Commit: 2}, func(tx projections.Tx) error {
		if err := tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: 2, ChannelUserID: "d"}); err != nil {
			return err
		}
		return tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: 3, ChannelUserID: "c"})
	})
	var conflict *memory.ChannelConflictError
	if !errors.As(err, &conflict) || conflict.OpenUserID != 1 {
		t.Fatalf("Update = %v, want ChannelConflictError held by 1", err)
	}
	if _, err := s.User(ctx, 1, 2); !errors.Is(err, projections.ErrNotFound) {
		t.Errorf("user 2 after failed Update: %v", err)
	}
	if p, _ := s.Checkpoint(ctx, "p"); p.Commit != 1 {
		t.Errorf("checkpoint = %v, want 1/0", p)
	}
	if u, err := s.UserByChannelID(ctx, 1, "c"); err != nil || u.OpenUserID != 1 {
		t.Errorf("UserByChannelID(c) = %v, %v", u.OpenUserID, err)
	}
}

func BenchmarkUserSnapshotRead(b *testing.B) {
	storetest.BenchmarkUserSnapshotRead(b, memory.New())
}
