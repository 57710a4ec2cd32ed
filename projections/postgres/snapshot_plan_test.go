package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/projections"
)

// The users read model's refresh of the snapshot documents plans the view
// user_snapshot_docs only on a connection's first few executions: Postgres
// then settles on the prepared statement's generic plan (the pool's
// statement cache prepares it once per connection), so a users read model
// transaction does not pay the view's planning (what a profile showed as
// planning per transaction was these first executions).
func TestSnapshotRefreshSettlesOnItsGenericPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, pgtest.New(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const users = 300
	err = s.Update(ctx, string(projections.ReadModelUsers), events.Position{Commit: 1, Prepare: 1}, func(tx projections.UserTx) error {
		for u := int64(1); u <= users; u++ {
			if err := tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: u, ChannelUserID: fmt.Sprint("c", u), Name: "n", Gender: "male", Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at}); err != nil {
				return err
			}
			if err := tx.PutMember(ctx, projections.Member{AppID: 1, OpenUserID: u, MemberID: u, AppUserID: "a", AppGroupID: u, FamilyGroupID: u, Name: "m", Relationship: "child", UpdatedAt: at}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if _, err := c.Exec(ctx, `ANALYZE users; ANALYZE family_members; ANALYZE family_groups`); err != nil {
		t.Fatal(err)
	}
	const runs = 30
	for i := int64(1); i <= runs; i++ {
		if _, err := c.Exec(ctx, refreshSnapshotsQuery, []int64{i, i + 1}, []int64{i + 2}); err != nil {
			t.Fatal(err)
		}
	}
	var generic, custom int64
	if err := c.QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1`, refreshSnapshotsQuery).Scan(&generic, &custom); err != nil {
		t.Fatalf("the refresh is not a prepared statement on its connection: %v", err)
	}
	// The connection may have run the refresh before (the set-up's
	// transaction): count plans, not this loop's executions.
	if custom > 5 || generic < runs-5 {
		t.Fatalf("%d refreshes on one connection (and perhaps the set-up's): %d generic and %d custom plans; want at most the first 5 custom", runs, generic, custom)
	}

}
