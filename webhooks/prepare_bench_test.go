package webhooks

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	evmemory "github.com/healthtech/partner-open-platform/events/memory"
)

// benchApps is an app directory of one app whose default endpoint takes
// every event.
type benchApps struct{ app domain.App }

func (a benchApps) ByID(id int64) (domain.App, bool) { return a.app, id == a.app.AppID }

// caughtUp is a read model that has applied the whole log already.
type caughtUp struct{}

func (caughtUp) WaitFor(context.Context, events.Position) error { return nil }
func (caughtUp) WaitReady(context.Context) error                { return nil }
func (caughtUp) Changed() <-chan struct{}                       { return nil }

// BenchmarkPrepareBatch is the creation's per-event CPU for member
// upserts: decode, render, plan and encode the delivery of each event of a
// batch of 4 (the read models already reflect them, so nothing waits).
func BenchmarkPrepareBatch(b *testing.B) {
	ctx := context.Background()
	reg := catalog.Registry()
	log := evmemory.New()
	defer log.Close()
	const n = 256
	var recs []events.Recorded
	for i := range n {
		p := catalog.FamilyMemberUpdated{ChannelUserID: fmt.Sprintf("ch-user-%06d", i), OpenUserID: int64(100000 + i), Changed: []string{"name"},
			Member: catalog.Member{MemberID: int64(i), AppUserID: fmt.Sprintf("app-user-%d", i), FamilyGroupID: 7, AppGroupID: 3, Name: "Member <" + fmt.Sprint(i) + ">"}}
		ev, err := reg.Encode(p, events.Metadata{AppID: 17, Actor: "bench", OccurredAt: time.Date(2026, 11, 24, 6, 30, 0, 0, time.UTC)})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := log.Append(ctx, fmt.Sprintf("user-%d", i), events.Any(), ev); err != nil {
			b.Fatal(err)
		}
	}
	all, err := log.ReadAll(ctx, events.Position{}, n)
	if err != nil {
		b.Fatal(err)
	}
	recs = all
	d := &Dispatcher{Store: log, Registry: reg, AppsReady: caughtUp{}, Projected: caughtUp{}, Clock: SystemClock{}, Location: time.UTC,
		Apps: benchApps{domain.App{AppID: 17, WebhookURL: "http://127.0.0.1:9/hook"}}}
	const batch = 4
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p, err := d.PrepareBatch(ctx, recs[i:i+batch])
		if err != nil || len(p.evs) != batch {
			b.Fatalf("prepared %d deliveries, err %v", len(p.evs), err)
		}
		i = (i + batch) % n
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/event")
}
