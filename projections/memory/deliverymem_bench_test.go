package memory

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"slices"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// BenchmarkDeliveriesLiveHeap reports the live heap the deliveries read
// model holds per delivery (B/delivery), for feed entries like a seeded
// log's: uuid ids, a user's subject, a rendered profile update's body of
// about 240 bytes, one in ten pending (the others' bodies in the log).
//
//	go test -run '^$' -bench DeliveriesLiveHeap ./projections/memory
func BenchmarkDeliveriesLiveHeap(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	liveHeapPer(b, n, "B/delivery", func(s *Store) {
		s.KeepBodiesInLog(benchLog{})
		for i := 0; i < n; i += 1000 {
			if err := s.UpdateDeliveries(ctx, "deliveries", events.Position{Commit: uint64(i + 1), Prepare: uint64(i + 1)}, func(tx projections.DeliveryTx) error {
				for j := i; j < i+1000; j++ {
					if err := tx.PutDelivery(ctx, benchDelivery(j, at)); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// liveHeapPer reports the live heap a store holds once fill ran, per one
// of its n rows (metric unit).
func liveHeapPer(b *testing.B, n int, unit string, fill func(*Store)) {
	for b.Loop() {
		b.StopTimer()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := New()
		b.StartTimer()
		fill(s)
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), unit)
		runtime.KeepAlive(s)
		b.StartTimer()
	}
}

// BenchmarkRestoreDeliveries restores an image of 100,000 feed entries
// into an empty read model, as a start does after decoding the snapshot.
//
//	go test -run '^$' -bench RestoreDeliveries -benchmem ./projections/memory
func BenchmarkRestoreDeliveries(b *testing.B) {
	ctx := context.Background()
	src := benchDeliveries(b, 100_000)
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
// every tenth one pending for a second endpoint, with the body the
// dispatcher renders for a profile update.
func benchDelivery(j int, at time.Time) projections.Delivery {
	d := projections.Delivery{
		DeliveryID: fmt.Sprintf("%08x-0000-4000-8000-%012x", j, j), AppID: int64(j % 100), EndpointID: domain.DefaultEndpointID,
		EventType: "user.profile.updated", SourceEventID: fmt.Sprintf("%08x-1111-4000-8000-%012x", j, j),
		SourcePosition: events.Position{Commit: uint64(2*j + 1), Prepare: uint64(2*j + 1)},
		Cursor:         events.Position{Commit: uint64(2*j + 2), Prepare: uint64(2*j + 2)},
		Subject:        fmt.Sprintf("user-%d", j/4), Status: domain.DeliverySkipped, CreatedAt: at, UpdatedAt: at,
	}
	d.Body = fmt.Appendf(nil, `{"event":%q,"delivery_id":%q,"app_id":%d,"open_user_id":%d,"channel_user_id":"partner-user-%06d",`+
		`"occurred_at":"2026-11-30T09:02:03+08:00","data":{"changed_fields":["nickname","phone","email"]}}`,
		d.EventType, d.DeliveryID, d.AppID, 1_000_000+j/4, j/4)
	if j%10 == 0 {
		d.Status, d.NextAttemptAt, d.EndpointID = domain.DeliveryPending, &at, 2
	}
	return d
}

// benchLog is the log of benchDelivery's deliveries, each body made anew
// from its cursor: what a read of the log costs besides is not counted.
type benchLog struct{}

func (benchLog) DeliveryBodies(_ context.Context, at []events.Position) ([][]byte, error) {
	out := make([][]byte, len(at))
	for i, p := range at {
		out[i] = benchDelivery(int(p.Commit-2)/2, time.Time{}).Body
	}
	return out, nil
}

// benchDeliveries is a read model of n deliveries made by benchDelivery,
// the final ones' bodies in the log (benchLog).
func benchDeliveries(b *testing.B, n int) *Store {
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	s := New()
	s.KeepBodiesInLog(benchLog{})
	if err := s.UpdateDeliveries(ctx, "deliveries", events.Position{Commit: uint64(2*n + 2), Prepare: uint64(2*n + 2)}, func(tx projections.DeliveryTx) error {
		for j := 0; j < n; j++ {
			if err := tx.PutDelivery(ctx, benchDelivery(j, at)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkDeliveryRead reads one delivery with its body and attempts, as
// GET /open/v1/webhooks/deliveries/:id and each attempt of the sender do.
//
//	go test -run '^$' -bench DeliveryRead -benchmem ./projections/memory
func BenchmarkDeliveryRead(b *testing.B) {
	const n = 10_000
	ctx := context.Background()
	s := benchDeliveries(b, n)
	ids := make([]string, n)
	for j := range ids {
		ids[j] = benchDelivery(j, time.Time{}).DeliveryID
	}
	b.ReportAllocs()
	j := 0
	for b.Loop() {
		j = (j + 7919) % n
		d, _, err := s.Delivery(ctx, int64(j%100), ids[j])
		if err != nil || len(d.Body) == 0 {
			b.Fatal(err, len(d.Body))
		}
	}
}

// BenchmarkFeedPage reads a page of 100 of an app's feed entries with
// their bodies, as GET /open/v1/webhooks/events does.
//
//	go test -run '^$' -bench FeedPage -benchmem ./projections/memory
func BenchmarkFeedPage(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	s := benchDeliveries(b, n)
	b.ReportAllocs()
	after := uint64(0)
	for b.Loop() {
		page, err := s.Deliveries(ctx, domain.DeliveryFilter{AppID: 7, Feed: true, Limit: 100, After: events.Position{Commit: after, Prepare: after}})
		if err != nil || len(page) != 100 {
			b.Fatal(err, len(page))
		}
		if after += 2 * 100 * 100; after > 2*n-2*100*100 {
			after = 0
		}
	}
}

// BenchmarkDeliveriesCollect runs a whole collection of a heap that holds
// a read model of 100,000 deliveries, and reports the heap the collector
// scans for them (scan-B/delivery, runtime/metrics' /gc/scan/heap:bytes:
// the bytes of objects that hold pointers, up to their last pointer): its
// mark work follows them. Count the collection in instructions
// (callgrind, the difference of two -test.benchtime counts): its wall time
// follows the load.
//
//	go test -run '^$' -bench DeliveriesCollect ./projections/memory
func BenchmarkDeliveriesCollect(b *testing.B) {
	const n = 100_000
	scanned := func() uint64 {
		runtime.GC()
		m := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}}
		metrics.Read(m)
		return m[0].Value.Uint64()
	}
	before := scanned()
	s := benchDeliveries(b, n)
	scan := scanned() - before
	for b.Loop() {
		runtime.GC()
	}
	b.ReportMetric(float64(scan)/n, "scan-B/delivery")
	runtime.KeepAlive(s)
}
