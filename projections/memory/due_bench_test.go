package memory

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// BenchmarkDueBesideASuspendedBacklog: the sender's scan while one app,
// which it names in skipApps (suspended), has 20,000 due deliveries and
// another has 50. One op is one Due of 100; with one heap for every app
// the scan walked past the whole backlog each time.
func BenchmarkDueBesideASuspendedBacklog(b *testing.B) {
	s := New()
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	err := s.UpdateDeliveries(ctx, "deliveries", events.Position{Commit: 1}, func(tx projections.DeliveryTx) error {
		for i := range 20050 {
			app := int64(1)
			if i%401 == 0 && i/401 < 50 {
				app = 2
			}
			next := base.Add(time.Duration(i) * time.Millisecond)
			d := projections.Delivery{DeliveryID: fmt.Sprintf("d%05d", i), AppID: app, EventType: "user.profile.updated",
				Cursor: events.Position{Commit: uint64(i + 1)}, Status: domain.DeliveryPending, NextAttemptAt: &next, CreatedAt: base, UpdatedAt: base}
			if err := tx.PutDelivery(ctx, d); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	now := base.Add(time.Hour)
	b.ResetTimer()
	for range b.N {
		due, err := s.Due(ctx, now, 100, 1)
		if err != nil || len(due) != 50 {
			b.Fatalf("Due: %d, %v", len(due), err)
		}
	}
}

// BenchmarkDeliveredOutOfADueBacklog: a drain's projection of outcomes.
// One app has 20,000 due deliveries; one op records one of them delivered
// (earliest first, as a drain sends them), taking it out of the due heap.
func BenchmarkDeliveredOutOfADueBacklog(b *testing.B) {
	s := New()
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n := max(b.N, 20000)
	dels := make([]projections.Delivery, n)
	err := s.UpdateDeliveries(ctx, "deliveries", events.Position{Commit: 1}, func(tx projections.DeliveryTx) error {
		for i := range dels {
			next := base.Add(time.Duration(i) * time.Millisecond)
			dels[i] = projections.Delivery{DeliveryID: fmt.Sprintf("d%06d", i), AppID: 1, EventType: "user.profile.updated",
				Cursor: events.Position{Commit: uint64(i + 1)}, Status: domain.DeliveryPending, NextAttemptAt: &next, CreatedAt: base, UpdatedAt: base}
			if err := tx.PutDelivery(ctx, dels[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		d := dels[i]
		d.Status, d.NextAttemptAt, d.Attempts = domain.DeliveryDelivered, nil, 1
		err := s.UpdateDeliveries(ctx, "deliveries", events.Position{Commit: uint64(n + i + 2)}, func(tx projections.DeliveryTx) error {
			return tx.PutDelivery(ctx, d)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
