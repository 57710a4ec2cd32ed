package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/projections"
)

// BenchmarkMemberUpsertRefresh measures what the snapshot document's
// refresh adds to a users-family transaction of one member upsert: the
// same transaction as update runs it (the upsert, the checkpoint, one
// pipelined round trip and the commit), with and without refreshSnapshots'
// two statements, in alternating rounds in one process on one database
// (200 users with one group and three members each, family=3, and 200 with
// twenty, family=20, as cmd/platformbench's member-upsert scenario makes
// them). Compare sub-benchmarks' ns/op as ratios; absolute times depend on
// the machine's load. The upsert itself writes the member's part of the
// document (migrations/snapshots 0002), so compare refresh=true between
// builds for what a write costs in all.
func BenchmarkMemberUpsertRefresh(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, pgtest.New(b))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const app, users = int64(1), 200
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	member := func(u, i int64, name string) projections.Member {
		return projections.Member{AppID: app, OpenUserID: u, MemberID: u*100 + i, AppUserID: fmt.Sprint("m", u, i), AppGroupID: u, FamilyGroupID: u,
			Name: name, Relationship: "child", UpdatedAt: at}
	}
	// family is the members per user: users 1..200 have 3, 201..400 have 20.
	family := func(u int64) int64 {
		if u > users {
			return 20
		}
		return 3
	}
	pos := int64(1)
	err = s.Update(ctx, string(projections.ReadModelUsers), events.Position{Commit: 1, Prepare: 1}, func(tx projections.UserTx) error {
		for u := int64(1); u <= 2*users; u++ {
			if err := tx.PutUser(ctx, projections.User{AppID: app, OpenUserID: u, ChannelUserID: fmt.Sprint("c", u), Name: "n", Gender: "male", Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at}); err != nil {
				return err
			}
			if err := tx.PutGroup(ctx, projections.Group{AppID: app, OpenUserID: u, FamilyGroupID: u, AppGroupID: u, Name: "g", CreatedAt: at, UpdatedAt: at}); err != nil {
				return err
			}
			for i := int64(0); i < family(u); i++ {
				if err := tx.PutMember(ctx, member(u, i, "m")); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	for round := 1; round <= 3; round++ {
		for _, size := range []int64{3, 20} {
			for _, refresh := range []bool{false, true} {
				b.Run(fmt.Sprintf("family=%d/refresh=%v/%d", size, refresh, round), func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						pos++
						u := 1 + rand.Int64N(users)
						if size == 20 {
							u += users
						}
						err := pgx.BeginFunc(ctx, s.pool, func(db pgx.Tx) error {
							t := &tx{db: db, batch: &pgx.Batch{}}
							if err := t.PutMember(ctx, member(u, rand.Int64N(size), fmt.Sprint("m", i))); err != nil {
								return err
							}
							if refresh {
								t.refreshSnapshots()
							}
							t.batch.Queue(upsertCheckpoint, string(projections.ReadModelUsers), pos, pos)
							return t.flush(ctx)
						})
						if err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
