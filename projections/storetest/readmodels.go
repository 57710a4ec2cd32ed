package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// readModelCases are the cases of the read models sub-suite.
var readModelCases = []testCase{
	{"ResetReadModelLeavesTheOthers", testResetReadModel},
	{"ReadModelsUpdateConcurrently", testReadModelsConcurrently},
	{"ResetEmptiesOrdersAndBenefits", testResetCommerce},
}

// The cross-read-model cases: what one read model does to the others.

// fillReadModels writes one row into every read model, each through its own Update.
func fillReadModels(t *testing.T, s Store) {
	t.Helper()
	put(t, s, []projections.User{fullUser(1, 10, "c")}, nil, nil)
	putDeliveries(t, s, dlv(1, 1))
	putReports(t, s, report(1, 10, 1, "2024-03-05"))
	putGoods(t, s, goodsOf(1))
	write(t, benefitsOf(s), func(tx projections.BenefitTx) error { return tx.PutCard(context.Background(), cardOf(1, 1, 11)) })
	addFacts(t, s, fact(1, "operator:1", "user-10"))
}

// readModelRows reports which read models still hold their fixture row.
func readModelRows(t *testing.T, s Store) map[projections.ReadModel]bool {
	t.Helper()
	_, uerr := s.User(ctx, 1, 10)
	_, _, derr := s.Delivery(ctx, 1, dlv(1, 1).DeliveryID)
	_, rerr := s.Report(ctx, 1, 1)
	gs, gerr := s.GoodsList(ctx)
	_, cerr := s.CardByNumber(ctx, 1, cardNumber(1))
	if gerr != nil {
		t.Fatal(gerr)
	}
	facts := must(s.AuditFacts(ctx, projections.AuditFilter{}))(t)
	return map[projections.ReadModel]bool{
		projections.ReadModelUsers: uerr == nil, projections.ReadModelDeliveries: derr == nil, projections.ReadModelReports: rerr == nil,
		projections.ReadModelOrders: len(gs) == 1, projections.ReadModelBenefits: cerr == nil,
		projections.ReadModelAudit: len(facts) == 1,
	}
}

// testResetReadModel: a read model's reset empties its rows and its checkpoint and
// nothing of any other read model, so one read model can be rebuilt while the others
// keep serving.
func testResetReadModel(t *testing.T, s Store) {
	for _, reset := range projections.ReadModels {
		if err := s.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		fillReadModels(t, s)
		pos := nextPos()
		for _, f := range projections.ReadModels {
			writeAt(t, usersOf(s), string(f), pos, func(projections.UserTx) error { return nil })
		}
		if err := s.ResetReadModel(ctx, reset); err != nil {
			t.Fatalf("ResetReadModel(%s): %v", reset, err)
		}
		for f, present := range readModelRows(t, s) {
			if present == (f == reset) {
				t.Errorf("after ResetReadModel(%s): %s rows present = %v", reset, f, present)
			}
			want := pos
			if f == reset {
				want = events.Position{}
			}
			wantCheckpoint(t, s, string(f), want)
		}
	}
	if err := s.ResetReadModel(ctx, "no-such-family"); err == nil {
		t.Error("ResetReadModel of an unknown family succeeded")
	}
}

// testReadModelsConcurrently: every read model's Update runs at once with the
// others (the race detector watches the stores' locks), and each ends at its
// own checkpoint.
func testReadModelsConcurrently(t *testing.T, s Store) {
	const rounds = 20
	var wg sync.WaitGroup
	errs := make(chan error, 6*rounds)
	run := func(fn func(i int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= rounds; i++ {
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	at := func(i int) events.Position { return events.Position{Commit: uint64(i), Prepare: uint64(i)} }
	run(func(i int) error {
		return s.Update(ctx, "users", at(i), func(tx projections.UserTx) error {
			return tx.PutUser(ctx, fullUser(1, int64(i), fmt.Sprintf("c-%d", i)))
		})
	})
	run(func(i int) error {
		return s.UpdateDeliveries(ctx, "deliveries", at(i), func(tx projections.DeliveryTx) error { return tx.PutDelivery(ctx, dlv(1, i)) })
	})
	run(func(i int) error {
		return s.UpdateReports(ctx, "reports", at(i), func(tx projections.ReportTx) error {
			return tx.PutReport(ctx, report(1, 10, int64(i), "2024-03-05"))
		})
	})
	run(func(i int) error {
		return s.UpdateOrders(ctx, "orders", at(i), func(tx projections.OrderTx) error { return tx.PutGoods(ctx, goodsOf(int64(i))) })
	})
	run(func(i int) error {
		return s.UpdateBenefits(ctx, "benefits", at(i), func(tx projections.BenefitTx) error { return tx.PutCard(ctx, cardOf(1, i, int64(100+i))) })
	})
	run(func(i int) error {
		return s.UpdateAudit(ctx, "audit", at(i), func(tx projections.AuditTx) error {
			return tx.AddAuditFact(ctx, fact(i, "operator:1", "user-1"))
		})
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, f := range projections.ReadModels {
		wantCheckpoint(t, s, string(f), at(rounds))
	}
	if ms := must(s.ReportsOfDay(ctx, 1, 10, "2024-03-05"))(t); len(ms) != rounds {
		t.Errorf("reports after concurrent family updates: %d, want %d", len(ms), rounds)
	}
}
