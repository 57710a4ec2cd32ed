package commands

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
)

// Concurrent uploads of one request_report_id make one report, and every
// one of them answers with it; the same number for another user is refused.
func TestConcurrentReportCreatesMakeOneReport(t *testing.T) {
	eventStores(t, func(t *testing.T, store events.Store) {
		reg := catalog.Registry()
		ids := NewAllocator(store, reg, 20)
		u := NewUsers(store, reg, ids, testNames, time.Now, time.UTC)
		r := NewReports(store, reg, ids, time.Now)
		stamp := time.Now().Format("150405.000000000")
		one := registerOne(t, u, "rep-a-"+stamp)
		two := registerOne(t, u, "rep-b-"+stamp)
		in := ReportInput{OpenUserID: one, RequestReportID: domain.Val("R-" + stamp), ReportType: domain.Val("BLOOD_PRESSURE"), RawData: json.RawMessage(`{"sys":120}`)}
		var wg sync.WaitGroup
		var created atomic.Int64
		reports := sync.Map{}
		for range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := r.Create(ctx, in, "uploader:1", Meta{})
				if err != nil {
					t.Error(err)
					return
				}
				if res.Created {
					created.Add(1)
				}
				reports.Store(res.ReportID, true)
			}()
		}
		wg.Wait()
		n := 0
		reports.Range(func(any, any) bool { n++; return true })
		if created.Load() != 1 || n != 1 {
			t.Fatalf("created %d, distinct reports %d", created.Load(), n)
		}
		in.OpenUserID = two
		if _, err := r.Create(ctx, in, "uploader:1", Meta{}); !errors.Is(err, domain.ErrDuplicateReportKey) {
			t.Fatalf("same request_report_id, another user: %v", err)
		}
	})
}

// commitCounter counts the commits that touch the streams of one kind.
type commitCounter struct {
	events.Store
	prefixes []string
	appends  atomic.Int64 // single-stream appends
	multi    atomic.Int64 // multi-stream appends
}

func (c *commitCounter) counted(stream string) bool {
	for _, p := range c.prefixes {
		if strings.HasPrefix(stream, p) {
			return true
		}
	}
	return false
}

func (c *commitCounter) Append(ctx context.Context, stream string, exp events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	if c.counted(stream) {
		c.appends.Add(1)
	}
	return c.Store.Append(ctx, stream, exp, evs...)
}

func (c *commitCounter) AppendMulti(ctx context.Context, parts ...events.StreamAppend) ([]events.AppendResult, error) {
	for _, p := range parts {
		if c.counted(p.Stream) {
			c.multi.Add(1)
			break
		}
	}
	return events.AppendMulti(ctx, c.Store, parts...)
}

// An order's third_order_id and a report's request_report_id are claimed in
// the same commit that creates what they name: no reader of the log ever
// sees a claim without its order or report.
func TestClaimsLandWithWhatTheyName(t *testing.T) {
	inner := memory.New()
	store := &commitCounter{Store: inner, prefixes: []string{"order", "report"}}
	reg := catalog.Registry()
	ids := NewAllocator(store, reg, 20)
	o := NewOrders(store, reg, ids, time.Now)
	if _, _, err := o.CreateGoods(ctx, "G1", "monitor", Meta{}); err != nil {
		t.Fatal(err)
	}
	order, err := o.CreateOrder(ctx, 7, OrderInput{ThirdOrderID: "T1", ContactPerson: "Li", ContactPhone: "13812345678", Address: "Beijing",
		Items: []OrderItemIn{{GoodsCode: "G1", Quantity: 1, UnitPrice: 100}}}, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	u := NewUsers(inner, reg, ids, testNames, time.Now, time.UTC)
	r := NewReports(store, reg, ids, time.Now)
	report, err := r.Create(ctx, ReportInput{OpenUserID: registerOne(t, u, "claims"), RequestReportID: domain.Val("R1"), ReportType: domain.Val("ECG"),
		RawData: json.RawMessage(`{"hr":72}`)}, "uploader:1", Meta{})
	if err != nil {
		t.Fatal(err)
	}
	if a, m := store.appends.Load(), store.multi.Load(); a != 0 || m != 2 {
		t.Fatalf("order and report created in %d single-stream and %d multi-stream appends, want 0 and 2", a, m)
	}
	recs, err := inner.ReadAll(ctx, events.Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		claim, created string
		at             events.Position
	}{
		{domain.OrderKeyStream(7, "T1"), domain.OrderStream(order.OrderID), order.Position},
		{domain.ReportKeyStream("uploader:1", "R1"), domain.ReportStream(report.ReportID), report.Position},
	} {
		var claimAt, createdAt events.Position
		for _, rec := range recs {
			switch rec.Stream {
			case c.claim:
				claimAt = rec.Position
			case c.created:
				createdAt = rec.Position
			}
		}
		if claimAt == (events.Position{}) || createdAt == (events.Position{}) || c.at.Less(claimAt) || c.at.Less(createdAt) {
			t.Fatalf("%s at %v, %s at %v, answered position %v: want both recorded at or before the answer", c.claim, claimAt, c.created, createdAt, c.at)
		}
	}
}
