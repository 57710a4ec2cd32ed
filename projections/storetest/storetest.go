// Package storetest is the conformance suite of the read-model port: the
// embedded and the Postgres stores must answer the query API identically, so
// both run exactly these cases, read model by read model.
package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/nonces"
	"github.com/healthtech/partner-open-platform/internal/nonces/noncetest"
	"github.com/healthtech/partner-open-platform/projections"
)

// Store is an adapter under test: every read model's port, the nonce store,
// and the adapter's own Reset (every read model) and Close.
type Store interface {
	projections.UserStore
	projections.DeliveryStore
	projections.ReportStore
	projections.OrderStore
	projections.BenefitStore
	projections.AuditStore
	nonces.Store
	Reset(ctx context.Context) error
	Close() error
}

// testCase is one case of a read model's sub-suite, run on a fresh store.
type testCase struct {
	name string
	fn   func(t *testing.T, s Store)
}

// Run checks that the stores made by open honour every promise of each
// read model's port (users, deliveries, reports, orders, benefits, audit), of the
// nonce store and of the read models side by side, so that the query API, the
// delivery log, the dispatcher, the report pull, the replay guard and the
// order and benefit reads behave the same whichever store the deployment
// uses. Each read model is a sub-suite; open is called once per case and must
// return an empty store, which Run closes when the case ends. The cases run
// in parallel: open must return stores that share nothing.
func Run(t *testing.T, open func(t *testing.T) Store) {
	t.Helper()
	for _, suite := range []struct {
		name  string
		cases []testCase
	}{
		{"users", userCases},
		{"deliveries", deliveryCases},
		{"reports", reportCases},
		{"orders", orderCases},
		{"benefits", benefitCases},
		{"audit", auditCases},
		{"nonces", nonceCases()},
		{"readmodels", readModelCases},
	} {
		t.Run(suite.name, func(t *testing.T) {
			for _, c := range suite.cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel() // each case has its own store
					s := open(t)
					if s == nil {
						t.Fatal("open returned a nil store")
					}
					t.Cleanup(func() {
						if err := s.Close(); err != nil {
							t.Errorf("Close: %v", err)
						}
					})
					c.fn(t, s)
				})
			}
		})
	}
}

// BenchmarkUserSnapshotRead measures the reads the snapshot endpoint makes
// for one user (User, Groups, Members), so the stores can be compared on the
// query API's hottest path.
func BenchmarkUserSnapshotRead(b *testing.B, s Store) {
	b.Helper()
	const app, owner = int64(7), int64(1001)
	err := s.Update(ctx, "bench", events.Position{Commit: 1, Prepare: 1}, func(tx projections.UserTx) error {
		// Neighbours make the indexes matter.
		for o := owner - 50; o <= owner+50; o++ {
			u := fullUser(app, o, fmt.Sprintf("bench-%d", o))
			if err := tx.PutUser(ctx, u); err != nil {
				return err
			}
			for g := int64(0); g < 3; g++ {
				gid := o*10 + g
				if err := tx.PutGroup(ctx, group(app, o, gid)); err != nil {
					return err
				}
				for m := int64(0); m < 3; m++ {
					if err := tx.PutMember(ctx, member(app, o, gid, gid*10+m)); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatalf("seed: %v", err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.User(ctx, app, owner); err != nil {
			b.Fatal(err)
		}
		gs, err := s.Groups(ctx, app, owner)
		if err != nil || len(gs) != 3 {
			b.Fatalf("Groups: %d, %v", len(gs), err)
		}
		ms, err := s.Members(ctx, app, owner, time.Time{})
		if err != nil || len(ms) != 9 {
			b.Fatalf("Members: %d, %v", len(ms), err)
		}
	}
}

// MemberReader is implemented by stores that can read one member row even
// when it is soft-deleted; the port exposes deleted rows nowhere, so the suite
// uses it, when present, to check what DeleteMember wrote.
type MemberReader interface {
	// Member returns the member row, deleted or not, if it belongs to appID.
	Member(ctx context.Context, appID, memberID int64) (projections.Member, error)
}

// nonceCases runs the replay guard's conformance cases (noncetest) on whole
// read-model stores, which implement the port too.
func nonceCases() []testCase {
	var cs []testCase
	for _, c := range noncetest.Cases() {
		cs = append(cs, testCase{c.Name, func(t *testing.T, s Store) { c.Fn(t, s) }})
	}
	return cs
}
