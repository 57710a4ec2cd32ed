package projections_test

import (
	"context"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory"
)

// The deliveries projection records each delivery's endpoint and each
// attempt's response excerpt, and erasing the delivery's person blanks
// the excerpts with the body (a receiver may echo what it was sent).
func TestDeliveriesProjectEndpointsAndErasedExcerpts(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	p := projections.DeliveriesProjector(store)
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	n := uint64(0)
	apply := func(ps ...events.Payload) {
		t.Helper()
		var batch []events.Envelope
		for _, pl := range ps {
			n++
			batch = append(batch, events.Envelope{Recorded: events.Recorded{ID: "e" + string(rune('a'+n)), Position: events.Position{Commit: n, Prepare: n}},
				Payload: pl, Metadata: events.Metadata{OccurredAt: at}})
		}
		if err := p.Apply(ctx, batch, batch[len(batch)-1].Position); err != nil {
			t.Fatal(err)
		}
	}
	apply(
		&catalog.DeliveryCreated{DeliveryID: "d-user", AppID: 1, EndpointID: 12, Event: "user.profile.updated", SourceStream: "user-7",
			Body: `{"event":"user.profile.updated","open_user_id":7}`, Deliver: true},
		&catalog.DeliveryCreated{DeliveryID: "d-order", AppID: 1, Event: "order.shipped", SourceStream: "order-9", Body: `{"event":"order.shipped"}`, Deliver: true},
		&catalog.DeliveryAttempted{DeliveryID: "d-user", Attempt: 1, At: at, StatusCode: 200, Outcome: domain.OutcomeDelivered, ResponseExcerpt: "echo: Li Lei\x00", OpenUserID: 7},
		&catalog.DeliveryAttempted{DeliveryID: "d-order", Attempt: 1, At: at, StatusCode: 200, Outcome: domain.OutcomeDelivered, ResponseExcerpt: "ok"},
	)
	d, as, err := store.Delivery(ctx, 1, "d-user")
	if err != nil {
		t.Fatal(err)
	}
	if d.EndpointID != 12 || len(as) != 1 || as[0].ResponseExcerpt != "echo: Li Lei" {
		t.Fatalf("delivery %+v attempts %+v", d, as)
	}
	e12 := int64(12)
	if ds, _ := store.Deliveries(ctx, domain.DeliveryFilter{AppID: 1, EndpointID: &e12}); len(ds) != 1 || ds[0].DeliveryID != "d-user" {
		t.Fatalf("endpoint 12's deliveries %+v", ds)
	}
	if ds, _ := store.Deliveries(ctx, domain.DeliveryFilter{AppID: 1, Feed: true}); len(ds) != 1 || ds[0].DeliveryID != "d-order" {
		t.Fatalf("the feed %+v: only the default endpoint's deliveries", ds)
	}

	apply(&catalog.UserErased{OpenUserID: 7})
	if _, as, _ := store.Delivery(ctx, 1, "d-user"); as[0].ResponseExcerpt != "" {
		t.Fatalf("an erased person's excerpt is kept: %q", as[0].ResponseExcerpt)
	}
	if _, as, _ := store.Delivery(ctx, 1, "d-order"); as[0].ResponseExcerpt != "ok" {
		t.Fatalf("another delivery's excerpt changed: %q", as[0].ResponseExcerpt)
	}
	// An attempt recorded after the erasure (a sender that raced it) keeps no excerpt either.
	apply(&catalog.DeliveryAttempted{DeliveryID: "d-user", Attempt: 2, At: at, StatusCode: 200, Outcome: domain.OutcomeDelivered, ResponseExcerpt: "late echo"})
	if _, as, _ := store.Delivery(ctx, 1, "d-user"); as[1].ResponseExcerpt != "" {
		t.Fatalf("a late attempt's excerpt is kept: %q", as[1].ResponseExcerpt)
	}
}
