package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

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
							t := &tx{db: db.Conn(), batch: &pgx.Batch{}}
							if err := t.PutMember(ctx, member(u, rand.Int64N(size), fmt.Sprint("m", i))); err != nil {
								return err
							}
							if refresh {
								t.refreshSnapshots()
							}
							t.batch.Queue(advanceCheckpoint, string(projections.ReadModelUsers), pos, pos)
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

// BenchmarkRegisterApply measures the users read model's transaction of a
// batch of 17 registers (each a user and one group, as the register
// scenario's applies hold about that many) and of one (as a node taking
// calls one at a time applies them, where the transaction's round trips
// are most of the cost), and a profile update's apply (patch: one user
// read, then written): fresh=true as a register is
// applied (RegisterUser, the documents built in Go), fresh=false with the
// users written by PutUser, whose documents the refresh statement builds
// in SQL. Alternating rounds on one connection; besides ns/op it reports
// the Postgres backend's own CPU per register (pg-µs/register, from
// /proc/<pid>/schedstat, so only against a server on this machine) and
// this process's (go-µs/register, the client's side of the transaction),
// which the machine's load moves far less than the wall clock.
func BenchmarkRegisterApply(b *testing.B) {
	ctx := context.Background()
	url := pgtest.New(b)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if err := migrate(ctx, pool); err != nil {
		b.Fatal(err)
	}
	s := &Store{pool: pool}
	var pid int
	if err := pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		b.Fatal(err)
	}
	backendCPU := func() time.Duration {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
		if err != nil {
			return -1
		}
		var ns int64
		fmt.Sscan(string(raw), &ns)
		return time.Duration(ns)
	}
	processCPU := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	next, pos := int64(1), int64(1)
	for round := 1; round <= 3; round++ {
		for _, run := range []struct {
			batch        int
			fresh, patch bool
		}{{17, false, false}, {17, true, false}, {1, true, false}, {1, false, true}} {
			batch, fresh, patch := run.batch, run.fresh, run.patch
			// Statistics as autovacuum keeps them, so that the refresh's plan
			// is the one a served database gets.
			if _, err := pool.Exec(ctx, `ANALYZE users, family_groups, family_members, user_snapshots`); err != nil {
				b.Fatal(err)
			}
			name := fmt.Sprintf("batch=%d/fresh=%v/%d", batch, fresh, round)
			if patch {
				name = fmt.Sprintf("patch/%d", round)
			}
			b.Run(name, func(b *testing.B) {
				cpu0, own0 := backendCPU(), processCPU()
				for i := 0; i < b.N; i++ {
					pos++
					err := s.Update(ctx, string(projections.ReadModelUsers), events.Position{Commit: uint64(pos), Prepare: uint64(pos)}, func(t projections.UserTx) error {
						if patch {
							u, err := t.User(ctx, 1+rand.Int64N(next-1))
							if err != nil {
								return err
							}
							u.Name = fmt.Sprint("patched ", i)
							return t.PutUser(ctx, u)
						}
						for range batch {
							id := next
							next++
							u := projections.User{AppID: 1, OpenUserID: id, ChannelUserID: fmt.Sprint("channel-user-", id), Name: "Li Lei",
								Gender: "unknown", Phone: new(string), Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at}
							var err error
							if fresh {
								err = t.(registrar).RegisterUser(ctx, u)
							} else {
								err = t.PutUser(ctx, u)
							}
							if err != nil {
								return err
							}
							if err := t.(registrar).NameGroup(ctx, projections.Group{AppID: 1, OpenUserID: id, FamilyGroupID: id, AppGroupID: 1,
								Name: "family", CreatedAt: at, UpdatedAt: at}); err != nil {
								return err
							}
						}
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
				}
				if cpu1 := backendCPU(); cpu0 >= 0 && cpu1 >= 0 {
					b.ReportMetric(float64(cpu1-cpu0)/float64(time.Microsecond)/float64(b.N*batch), "pg-µs/register")
				}
				b.ReportMetric(float64(processCPU()-own0)/float64(time.Microsecond)/float64(b.N*batch), "go-µs/register")
			})
		}
	}
}
