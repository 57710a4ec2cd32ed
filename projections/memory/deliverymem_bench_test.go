package memory

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// BenchmarkDeliveriesLiveHeap reports the live heap the deliveries read
// model holds per delivery (B/delivery), for feed entries like a seeded
// log's: uuid ids, a user's subject, a 250-byte body, one in ten pending.
//
//	go test -run '^$' -bench DeliveriesLiveHeap ./projections/memory
func BenchmarkDeliveriesLiveHeap(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	body := make([]byte, 250)
	for b.Loop() {
		b.StopTimer()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := New()
		b.StartTimer()
		for i := 0; i < n; i += 1000 {
			if err := s.UpdateDeliveries(ctx, "deliveries", events.Position{Commit: uint64(i + 1), Prepare: uint64(i + 1)}, func(tx projections.DeliveryTx) error {
				for j := i; j < i+1000; j++ {
					if err := tx.PutDelivery(ctx, benchDelivery(j, at, body)); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/delivery")
		runtime.KeepAlive(s)
		b.StartTimer()
	}
}

// BenchmarkRestoreDeliveries restores an image of 100,000 feed entries
// into an empty read model, as a start does after decoding the snapshot.
//
//	go test -run '^$' -bench RestoreDeliveries -benchmem ./projections/memory
func BenchmarkRestoreDeliveries(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	body := make([]byte, 250)
	src := New()
	if err := src.UpdateDeliveries(ctx, "deliveries", events.Position{Commit: 1, Prepare: 1}, func(tx projections.DeliveryTx) error {
		for j := 0; j < n; j++ {
			if err := tx.PutDelivery(ctx, benchDelivery(j, at, body)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	im, err := src.Image(ctx, projections.ReadModelDeliveries)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		rows := slices.Clone(im.Deliveries)
		copyIm := im
		copyIm.Deliveries = rows
		s := New()
		b.StartTimer()
		if err := s.Restore(ctx, copyIm); err != nil {
			b.Fatal(err)
		}
	}
}

// benchDelivery is the benchmarks' j-th delivery: a skipped feed entry, and
// every tenth one pending for a second endpoint.
func benchDelivery(j int, at time.Time, body []byte) projections.Delivery {
	d := projections.Delivery{
		DeliveryID: fmt.Sprintf("%08x-0000-4000-8000-%012x", j, j), AppID: int64(j % 100), EndpointID: domain.DefaultEndpointID,
		EventType: "user.profile.updated", SourceEventID: fmt.Sprintf("%08x-1111-4000-8000-%012x", j, j),
		SourcePosition: events.Position{Commit: uint64(2*j + 1), Prepare: uint64(2*j + 1)},
		Cursor:         events.Position{Commit: uint64(2*j + 2), Prepare: uint64(2*j + 2)},
		Body:           body, Subject: fmt.Sprintf("user-%d", j/4), Status: domain.DeliverySkipped, CreatedAt: at, UpdatedAt: at,
	}
	if j%10 == 0 {
		d.Status, d.NextAttemptAt, d.EndpointID = domain.DeliveryPending, &at, 2
	}
	return d
}
