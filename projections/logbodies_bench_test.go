package projections_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/bolt"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/datakeys"
	"github.com/healthtech/partner-open-platform/internal/datakeys/files"
	"github.com/healthtech/partner-open-platform/internal/secrets"
	"github.com/healthtech/partner-open-platform/privacy"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory"
)

// benchFeed is a node's deliveries read model over an embedded log: n
// deliveries of apps apps, one user in four a person of their own, every
// tenth pending (its body in memory), the others delivered (their bodies in
// the log, read through the privacy layer as the node reads them).
type benchFeed struct {
	rm    *memory.Store
	ids   []string
	apps  int
	n     int
	last  events.Position // the last feed entry of the app the pages read
	close func()
}

// newBenchFeed writes the log and fills the read model; reopened closes
// and opens the log again, so that no body is in the store's ring of
// recent events and every read is one of bbolt (a node restarted, a
// partner catching up on an old stretch); inMemory keeps every body in
// the read model instead, which reads no log.
func newBenchFeed(b *testing.B, n, apps int, reopened, inMemory bool) *benchFeed {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	kb, err := files.Open(filepath.Join(dir, "keys"))
	if err != nil {
		b.Fatal(err)
	}
	m, _ := secrets.New(bytes.Repeat([]byte{1}, 32))
	ks := datakeys.New(kb, m)
	path := filepath.Join(dir, "events.db")
	stored, err := bolt.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	log := privacy.New(stored, ks)
	reg := catalog.Registry()
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	ds := make([]projections.Delivery, n)
	const batch = 500
	for i := 0; i < n; i += batch {
		var parts []events.StreamAppend
		for j := i; j < min(n, i+batch); j++ {
			id := fmt.Sprintf("%08x-0000-4000-8000-%012x", j, j)
			app := int64(j%apps + 1)
			body := fmt.Sprintf(`{"event":"user.profile.updated","delivery_id":%q,"app_id":%d,"open_user_id":%d,"channel_user_id":"partner-user-%06d",`+
				`"occurred_at":"2026-12-01T17:00:00+08:00","data":{"changed_fields":["nickname","phone","email"]}}`, id, app, 1_000_000+j/4, j/4)
			ev, err := reg.Encode(catalog.DeliveryCreated{DeliveryID: id, AppID: app, Event: "user.profile.updated",
				SourceEventID: fmt.Sprintf("%08x-1111-4000-8000-%012x", j, j), SourceStream: fmt.Sprintf("user-%d", 1_000_000+j/4),
				Body: body, Deliver: true}, events.Metadata{AppID: app, OccurredAt: at})
			if err != nil {
				b.Fatal(err)
			}
			parts = append(parts, events.StreamAppend{Stream: "webhook-delivery-" + id, Expected: events.NoStream(), Events: []events.Proposed{ev}})
			ds[j] = projections.Delivery{DeliveryID: id, AppID: app, EndpointID: domain.DefaultEndpointID, EventType: "user.profile.updated",
				SourceEventID: fmt.Sprintf("%08x-1111-4000-8000-%012x", j, j), Subject: fmt.Sprintf("user-%d", 1_000_000+j/4),
				Status: domain.DeliveryDelivered, Attempts: 1, CreatedAt: at, UpdatedAt: at, Body: []byte(body)}
			if j%10 == 0 {
				ds[j].Status, ds[j].Attempts, ds[j].NextAttemptAt = domain.DeliveryPending, 0, &at
			}
		}
		res, err := events.AppendMulti(ctx, log, parts...)
		if err != nil {
			b.Fatal(err)
		}
		for k, r := range res {
			ds[i+k].Cursor = r.Position
		}
	}
	if reopened {
		if err := stored.Close(); err != nil {
			b.Fatal(err)
		}
		if stored, err = bolt.Open(path); err != nil {
			b.Fatal(err)
		}
		log = privacy.New(stored, ks)
	}
	rm := memory.New()
	if !inMemory {
		rm.KeepBodiesInLog(projections.LogBodies{Log: log, Registry: reg})
	}
	if err := rm.UpdateDeliveries(ctx, "deliveries", ds[n-1].Cursor, func(tx projections.DeliveryTx) error {
		for _, d := range ds {
			if err := tx.PutDelivery(ctx, d); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	f := &benchFeed{rm: rm, apps: apps, n: n, close: func() { stored.Close(); kb.Close() }}
	for _, d := range ds {
		f.ids = append(f.ids, d.DeliveryID)
		if d.AppID == 2 {
			f.last = d.Cursor
		}
	}
	b.Cleanup(f.close)
	return f
}

// processCPU is the process's user and system CPU so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process's CPU per operation (cpu-µs/op) of the
// loop that runs after it: the collector's share included.
func reportCPU(b *testing.B) {
	start := processCPU(b)
	b.Cleanup(func() {
		if b.N > 0 {
			b.ReportMetric(float64((processCPU(b)-start).Microseconds())/float64(b.N), "cpu-µs/op")
		}
	})
}

// BenchmarkLogFeedPage reads pages of 100 of an app's feed with their
// bodies, as GET /open/v1/webhooks/events does on an embedded node: about
// 90 of each page's bodies are read from the log, through the privacy
// layer, from bbolt (reopened) or from the store's ring of recent events
// (recent); inmemory is the read model that keeps every body, for
// reference. Delivery is one final delivery by id, as
// GET /open/v1/webhooks/deliveries/:id reads it.
//
//	go test -run '^$' -bench LogFeedPage -benchmem ./projections
func BenchmarkLogFeedPage(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name               string
		reopened, inMemory bool
	}{{"reopened", true, false}, {"recent", false, false}, {"inmemory", false, true}} {
		b.Run(c.name, func(b *testing.B) {
			const n, apps = 6000, 4 // 6,000 events: all in the ring of 8,192
			f := newBenchFeed(b, n, apps, c.reopened, c.inMemory)
			b.Run("page", func(b *testing.B) {
				b.ReportAllocs()
				reportCPU(b)
				var after events.Position
				for b.Loop() {
					page, err := f.rm.Deliveries(ctx, domain.DeliveryFilter{AppID: 2, Feed: true, Limit: 100, After: after})
					if err != nil || len(page) != 100 {
						b.Fatal(err, len(page))
					}
					for _, d := range page {
						if len(d.Body) == 0 {
							b.Fatalf("delivery %s read no body", d.DeliveryID)
						}
					}
					if after = page[len(page)-1].Cursor; after == f.last {
						after = events.Position{} // the app's feed read: again from its start
					}
				}
			})
			b.Run("delivery", func(b *testing.B) {
				b.ReportAllocs()
				reportCPU(b)
				j := 0
				for b.Loop() {
					if j = (j + 7919) % n; j%10 == 0 {
						j++ // a final delivery: its body in the log
					}
					d, _, err := f.rm.Delivery(ctx, int64(j%apps+1), f.ids[j])
					if err != nil || len(d.Body) == 0 {
						b.Fatal(err, len(d.Body))
					}
				}
			})
		})
	}
}
