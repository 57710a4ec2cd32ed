package memory

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/projections"
)

// BenchmarkProjectOutcome: a drain's projection of outcomes through the
// deliveries projector. 20,000 deliveries of rendered bodies (about 600
// bytes) are due; one op projects one DeliveryAttempted (delivered),
// earliest first, in a batch of its own.
func BenchmarkProjectOutcome(b *testing.B) {
	s := New()
	p := projections.DeliveriesProjector(s)
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n := max(b.N, 20000)
	ids := make([]string, n)
	created := make([]events.Envelope, n)
	data := strings.Repeat("x", 500)
	for i := range created {
		ids[i] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		body := fmt.Sprintf(`{"event":"user.profile.updated","delivery_id":"%s","app_id":1,"data":{"open_user_id":%d,"nickname":"%s"}}`, ids[i], i+1, data)
		created[i] = events.Envelope{Recorded: events.Recorded{Type: (catalog.DeliveryCreated{}).EventType(), Position: events.Position{Commit: uint64(i + 1), Prepare: uint64(i + 1)}},
			Metadata: events.Metadata{OccurredAt: base},
			Payload: &catalog.DeliveryCreated{DeliveryID: ids[i], AppID: 1, EndpointID: domain.DefaultEndpointID,
				Event: "user.profile.updated", SourceEventID: ids[i], Body: body, Deliver: true}}
	}
	if err := p.Apply(ctx, created, created[n-1].Position); err != nil {
		b.Fatal(err)
	}
	batch := make([]events.Envelope, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		pos := events.Position{Commit: uint64(n + i + 1), Prepare: uint64(n + i + 1)}
		batch[0] = events.Envelope{Recorded: events.Recorded{Type: (catalog.DeliveryAttempted{}).EventType(), Position: pos}, Metadata: events.Metadata{OccurredAt: base},
			Payload: &catalog.DeliveryAttempted{DeliveryID: ids[i], Attempt: 1, At: base, StatusCode: 200, LatencyMS: 1,
				Outcome: domain.OutcomeDelivered, ResponseExcerpt: "ok"}}
		if err := p.Apply(ctx, batch, pos); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreateAndDeliverOne: the deliveries projection of a node that
// keeps up, where an app's due queue is empty between deliveries. One op
// projects a DeliveryCreated and then its DeliveryAttempted (delivered),
// each in a batch of its own, so the delivery enters its app's due queue
// and leaves it empty again.
func BenchmarkCreateAndDeliverOne(b *testing.B) {
	s := New()
	p := projections.DeliveriesProjector(s)
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	body := `{"event":"user.profile.updated","app_id":1,"data":{"open_user_id":1,"nickname":"` + strings.Repeat("x", 500) + `"}}`
	batch := make([]events.Envelope, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		pos := events.Position{Commit: uint64(2*i + 1), Prepare: uint64(2*i + 1)}
		batch[0] = events.Envelope{Recorded: events.Recorded{Type: (catalog.DeliveryCreated{}).EventType(), Position: pos},
			Metadata: events.Metadata{OccurredAt: base},
			Payload: &catalog.DeliveryCreated{DeliveryID: id, AppID: 1, EndpointID: domain.DefaultEndpointID,
				Event: "user.profile.updated", SourceEventID: id, Body: body, Deliver: true}}
		if err := p.Apply(ctx, batch, pos); err != nil {
			b.Fatal(err)
		}
		pos = events.Position{Commit: uint64(2*i + 2), Prepare: uint64(2*i + 2)}
		batch[0] = events.Envelope{Recorded: events.Recorded{Type: (catalog.DeliveryAttempted{}).EventType(), Position: pos}, Metadata: events.Metadata{OccurredAt: base},
			Payload: &catalog.DeliveryAttempted{DeliveryID: id, Attempt: 1, At: base, StatusCode: 200, LatencyMS: 1,
				Outcome: domain.OutcomeDelivered, ResponseExcerpt: "ok"}}
		if err := p.Apply(ctx, batch, pos); err != nil {
			b.Fatal(err)
		}
	}
}
