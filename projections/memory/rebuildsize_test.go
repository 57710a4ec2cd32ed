package memory

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// A read model reset for a rebuild is made with room for the rows it held:
// replaying the same users and groups into it allocates the rows' own bytes
// but not the maps' growth, so it allocates less than filling a new store.
func TestARebuiltReadModelIsMadeAtItsFormerSize(t *testing.T) {
	const n = 20_000
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	fill := func(s *Store) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := s.Update(ctx, "users", events.Position{Commit: n, Prepare: n}, func(tx projections.UserTx) error {
			for id := int64(1); id <= n; id++ {
				phone := fmt.Sprintf("+86138%08d", id)
				if err := tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: id, ChannelUserID: fmt.Sprintf("rebuilt-%d", id),
					Name: "n", Phone: &phone, Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at}); err != nil {
					return err
				}
				if err := tx.PutGroup(ctx, projections.Group{AppID: 1, OpenUserID: id, FamilyGroupID: id, AppGroupID: id,
					Name: "g", CreatedAt: at, UpdatedAt: at}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	s := New()
	fresh := fill(s)
	if err := s.ResetReadModel(ctx, projections.ReadModelUsers); err != nil {
		t.Fatal(err)
	}
	if _, err := s.User(ctx, 1, 1); err == nil {
		t.Fatal("the reset read model still holds its first user")
	}
	rebuilt := fill(s)
	t.Logf("filling a new store allocated %d bytes, the reset one %d", fresh, rebuilt)
	if rebuilt > fresh*19/20 {
		t.Fatalf("the rebuild's replay allocated %d bytes, filling a new store %d: its maps grew again", rebuilt, fresh)
	}
}
