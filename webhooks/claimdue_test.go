package webhooks

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
)

// dueQueue is a delivery store that answers Due from a fixed queue, leaving
// out skipApps as the adapters do, and counts the rows it hands out.
type dueQueue struct {
	queue   []domain.DueDelivery
	mu      sync.Mutex
	rows    int
	skipped [][]int64
}

func (q *dueQueue) Due(_ context.Context, _ time.Time, limit int, skipApps ...int64) ([]domain.DueDelivery, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.skipped = append(q.skipped, slices.Sorted(slices.Values(skipApps)))
	var out []domain.DueDelivery
	for _, d := range q.queue {
		if len(out) < limit && !slices.Contains(skipApps, d.AppID) {
			out = append(out, d)
		}
	}
	q.rows += len(out)
	return out, nil
}

// NextDue is unused by claimDue: the queue has no schedule.
func (q *dueQueue) NextDue(context.Context) (time.Time, bool, error) { return time.Time{}, false, nil }

// scanned returns the rows handed out since the last call and the skip list of the last Due.
func (q *dueQueue) scanned() (int, []int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := q.rows
	q.rows = 0
	return n, q.skipped[len(q.skipped)-1]
}

type appDirectory map[int64]domain.App

func (a appDirectory) ByID(id int64) (domain.App, bool) { app, ok := a[id]; return app, ok }

// claimAll is a Claims that grants every id nobody holds.
type claimAll struct {
	mu   sync.Mutex
	held map[string]bool
}

func (c *claimAll) Claim(_ context.Context, _ string, ids []string, _ time.Duration) ([]Claim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Claim
	for _, id := range ids {
		if !c.held[id] {
			c.held[id] = true
			out = append(out, Claim{DeliveryID: id, Token: "t"})
		}
	}
	return out, nil
}

func (c *claimAll) Release(_ context.Context, cs []Claim) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range cs {
		delete(c.held, cl.DeliveryID)
	}
	return nil
}

// A suspended app's backlog and a busy endpoint's queue are named to Due
// once the sender knows of them, so a scan reads only what it may send:
// the others' deliveries behind them go out without the backlog being read
// again on every pass; a freed slot takes from the sender's own queue
// without reading the read model; a resumed app's deliveries are scanned
// again.
func TestScanDueLeavesOutAppsItCannotSendTo(t *testing.T) {
	apps := appDirectory{
		1: {AppID: 1, WebhookURL: "http://one", Suspended: true},
		2: {AppID: 2, WebhookURL: "http://two"},
		3: {AppID: 3, WebhookURL: "http://three"},
	}
	q := &dueQueue{}
	add := func(app int64, n int) {
		for i := range n {
			q.queue = append(q.queue, domain.DueDelivery{DeliveryID: fmt.Sprintf("d-%d-%04d", app, i), AppID: app})
		}
	}
	add(1, 3000) // the suspended app's backlog comes first
	add(3, 50)
	add(2, 5)
	d := &Dispatcher{Deliveries: q, Apps: apps, Claims: &claimAll{held: map[string]bool{}}, Node: "n", PerEndpoint: 2,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	eps := d.endpoints()
	suspended := map[int64]bool{}
	queue := newSendQueue()
	ctx := context.Background()
	// As RunSender does: scan, then claim from the queue, each claim
	// marked as this node's attempt.
	pass := func(scan bool) (ids []string, held bool) {
		t.Helper()
		if scan {
			_, h, _, err := d.scanDue(ctx, eps, suspended, queue, time.Now(), 8, true, nil)
			if err != nil {
				t.Fatal(err)
			}
			held = h
		}
		got, _, h, err := d.claimQueued(ctx, eps, suspended, queue, time.Now(), 8)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range got {
			d.setAttempting(c.DeliveryID, true)
			ids = append(ids, c.DeliveryID)
		}
		return ids, held || h
	}

	// First pass: it learns app 1 is suspended by reading past its backlog.
	got, held := pass(true)
	if !held {
		t.Fatalf("first pass: want app 1's deliveries held")
	}
	if want := []string{"d-3-0000", "d-3-0001", "d-2-0000", "d-2-0001"}; !slices.Equal(got, want) {
		t.Fatalf("claimed %v, want %v (two per endpoint)", got, want)
	}
	q.scanned()

	// Second pass, endpoints busy with their shares queued: neither app 1's
	// backlog nor app 3's nor app 2's queue is read again.
	got, held = pass(true)
	if !held || len(got) != 0 {
		t.Fatalf("second pass: claimed %v held %v, want nothing claimed and app 1 still held", got, held)
	}
	if rows, skip := q.scanned(); rows != 0 || !slices.Equal(skip, []int64{1, 2, 3}) {
		t.Fatalf("second pass read %d rows skipping %v, want none skipping apps 1, 2 and 3", rows, skip)
	}

	// App 2's POSTs end (their claims still held, their rows still due
	// until the outcome is recorded): its next deliveries go out from the
	// sender's queue, without reading the read model.
	eps.done(endpointKey{app: 2}, "http://two", false, false, time.Now())
	eps.done(endpointKey{app: 2}, "http://two", false, false, time.Now())
	got, _ = pass(false)
	if want := []string{"d-2-0002", "d-2-0003"}; !slices.Equal(got, want) {
		t.Fatalf("after app 2's POSTs ended claimed %v, want %v", got, want)
	}
	if rows, _ := q.scanned(); rows != 0 {
		t.Fatalf("read %d rows, want the queue used alone", rows)
	}

	// Resumed: app 1's deliveries are scanned and claimed again.
	apps[1] = domain.App{AppID: 1, WebhookURL: "http://one"}
	got, held = pass(true)
	if held || len(got) != 2 || !strings.HasPrefix(got[0], "d-1-") || !strings.HasPrefix(got[1], "d-1-") {
		t.Fatalf("after the resume claimed %v held %v, want two of app 1's and nothing held", got, held)
	}
}
