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
// every other row where it was, whatever the form of their ids (a uuid's
// canonical text is kept as its 16 bytes, any other text as it is).
func TestTableRemovesAMiddleRow(t *testing.T) {
	ids := []string{"d0", "0b5e4c52-8a0e-5d3c-9f6e-1c2d3e4f5a6b", "0B5E4C52-8A0E-5D3C-9F6E-1C2D3E4F5A6B", "1b5e4c52-8a0e-5d3c-9f6e-1c2d3e4f5a6b"}
	types := newEventTypes()
	tb := newDeliveryTable(0)
	for i, id := range ids {
		tb.add(packDelivery(projections.Delivery{DeliveryID: id, AppID: int64(i)}, &types, nil, true))
	}
	for _, gone := range []int{1, 2} {
		tb.remove(uint32(gone))
		if _, ok := tb.get(ids[gone]); ok {
			t.Fatalf("%s is still found", ids[gone])
		}
	}
	if tb.len() != 2 || tb.n != 4 {
		t.Fatalf("%d rows in %d places, want 2 in 4", tb.len(), tb.n)
	}
	for _, i := range []int{0, 3} {
		if r, ok := tb.get(ids[i]); !ok || r.deliveryID() != ids[i] || r.appID != int64(i) {
			t.Fatalf("%s reads %+v, %v", ids[i], r, ok)
		}
	}
	if at := tb.add(packDelivery(projections.Delivery{DeliveryID: fmt.Sprint("d", len(ids))}, &types, nil, true)); at != 4 {
		t.Fatalf("the next row took place %d, want 4", at)
	}
}

// A uuid in its canonical text is read as its 16 bytes and written back
// byte for byte; any other text (upper case, a digit out of hex, a hyphen
// out of place, another length) is not read as one.
func TestParseUUIDTakesOnlyTheCanonicalText(t *testing.T) {
	const canonical = "0b5e4c52-8a0e-5d3c-9f6e-1c2d3e4f5a6b"
	u, ok := parseUUID(canonical)
	if !ok || u.String() != canonical || u != (uuid16{0x0b, 0x5e, 0x4c, 0x52, 0x8a, 0x0e, 0x5d, 0x3c, 0x9f, 0x6e, 0x1c, 0x2d, 0x3e, 0x4f, 0x5a, 0x6b}) {
		t.Fatalf("parseUUID(%q) = %x, %v", canonical, u, ok)
	}
	for _, s := range []string{"0B5E4C52-8A0E-5D3C-9F6E-1C2D3E4F5A6B", "0b5e4c52-8a0e-5d3c-9f6e-1c2d3e4f5a6g", "0b5e4c52-8a0e-5d3c-9f6e-1c2d3e4f5a6/",
		"0b5e4c528-a0e-5d3c-9f6e-1c2d3e4f5a6b", "0b5e4c52-8a0e-5d3c-9f6e-1c2d3e4f5a6", "0b5e4c52-8a0e-5d3c-9f6e-1c2d3e4f5a6bb", "0b5e4c52:8a0e-5d3c-9f6e-1c2d3e4f5a6b", ""} {
		if u, ok := parseUUID(s); ok {
			t.Errorf("parseUUID(%q) = %x, want no uuid", s, u)
		}
	}
}
