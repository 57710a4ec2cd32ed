package memory

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// A batch that fails after creating deliveries (past a chunk's end) and
// changing others gives the table back as it was: every read answers as
// before, and the rows it made leave no place behind, so the next
// deliveries take those places and the feeds stay in order.
func TestAFailedBatchGivesItsPlacesBack(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	s := New()
	mk := func(i int) projections.Delivery {
		d := benchDelivery(i, at)
		d.AppID = int64(1 + i%3)
		return d
	}
	var before []projections.Delivery
	for i := 0; i < rowChunk-2; i++ {
		before = append(before, mk(i))
	}
	putDeliveries(t, s, before...)
	feed := func() []projections.Delivery {
		t.Helper()
		var all []projections.Delivery
		for _, app := range []int64{0, 1, 2, 3} {
			page, err := s.Deliveries(ctx, domain.DeliveryFilter{AppID: app, Limit: maxLimit})
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, page...)
		}
		return all
	}
	want := feed()
	boom := errors.New("boom")
	err := s.UpdateDeliveries(ctx, "deliveries", events.Position{Commit: 40, Prepare: 40}, func(tx projections.DeliveryTx) error {
		for i := rowChunk - 2; i < rowChunk+5; i++ {
			if err := tx.PutDelivery(ctx, mk(i)); err != nil {
				return err
			}
		}
		for _, i := range []int{3, 200} { // blanked, as an erasure does, and moved to another app
			d := mk(i)
			d.Subject, d.Body, d.AppID = "", []byte{}, 3
			if err := tx.PutDelivery(ctx, d); err != nil {
				return err
			}
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("the batch returned %v, want %v", err, boom)
	}
	if got := feed(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the failed batch the feeds read %d deliveries, not the %d before it", len(got), len(want))
	}
	if n := int(s.deliveries.n); n != len(before) || s.deliveries.len() != len(before) {
		t.Fatalf("the table holds %d places for %d deliveries, want %d", n, s.deliveries.len(), len(before))
	}
	next := mk(rowChunk + 10)
	putDeliveries(t, s, next)
	if at, _ := s.deliveries.place(next.DeliveryID); int(at) != len(before) {
		t.Fatalf("the next delivery took place %d, want %d", at, len(before))
	}
	if got := feed(); len(got) != len(want)+1 {
		t.Fatalf("the feeds read %d deliveries, want %d", len(got), len(want)+1)
	}
}

// A row taken out of the middle of the table leaves its place empty and
// every other row where it was.
func TestTableRemovesAMiddleRow(t *testing.T) {
	tb := newDeliveryTable(0)
	for i := range 3 {
		tb.add(deliveryRow{id: fmt.Sprint("d", i), appID: int64(i)})
	}
	tb.remove(1)
	if _, ok := tb.get("d1"); ok || tb.len() != 2 || tb.n != 3 {
		t.Fatalf("after removing d1: found %v, %d rows in %d places", ok, tb.len(), tb.n)
	}
	for _, id := range []string{"d0", "d2"} {
		if r, ok := tb.get(id); !ok || r.id != id {
			t.Fatalf("%s reads %+v, %v", id, r, ok)
		}
	}
	if at := tb.add(deliveryRow{id: "d3"}); at != 3 {
		t.Fatalf("the next row took place %d, want 3", at)
	}
}
