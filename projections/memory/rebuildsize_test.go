package memory

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// A read model reset for a rebuild is made with room for the rows it held:
// replaying the same deliveries into it allocates the rows' own bytes but
// not the maps' growth, so it allocates less than filling a new store.
func TestARebuiltReadModelIsMadeAtItsFormerSize(t *testing.T) {
	const n = 20_000
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	rows := make([]projections.Delivery, n)
	for j := range rows {
		rows[j] = benchDelivery(j, at)
	}
	fill := func(s *Store) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := s.UpdateDeliveries(ctx, "deliveries", events.Position{Commit: n, Prepare: n}, func(tx projections.DeliveryTx) error {
			for _, d := range rows {
				if err := tx.PutDelivery(ctx, d); err != nil {
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
	if err := s.ResetReadModel(ctx, projections.ReadModelDeliveries); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Delivery(ctx, rows[0].AppID, rows[0].DeliveryID); err == nil {
		t.Fatal("the reset read model still holds its first delivery")
	}
	rebuilt := fill(s)
	if rebuilt > fresh*3/4 {
		t.Fatalf("the rebuild's replay allocated %d bytes, filling a new store %d: its maps grew again", rebuilt, fresh)
	}
}
