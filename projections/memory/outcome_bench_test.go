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

// createdAt is the envelope of the creation of delivery id of app 1 to
// its default endpoint (to be sent), with body, at position pos.
func createdAt(id, body string, pos uint64, at time.Time) events.Envelope {
	return events.Envelope{Recorded: events.Recorded{Type: (catalog.DeliveryCreated{}).EventType(), Position: events.Position{Commit: pos, Prepare: pos}},
		Metadata: events.Metadata{OccurredAt: at},
		Payload: &catalog.DeliveryCreated{DeliveryID: id, AppID: 1, EndpointID: domain.DefaultEndpointID,
			Event: "user.profile.updated", SourceEventID: id, Body: body, Deliver: true}}
}

// deliveredAt is the envelope of delivery id's first attempt, delivered,
// at position pos.
func deliveredAt(id string, pos uint64, at time.Time) events.Envelope {
	return events.Envelope{Recorded: events.Recorded{Type: (catalog.DeliveryAttempted{}).EventType(), Position: events.Position{Commit: pos, Prepare: pos}},
		Metadata: events.Metadata{OccurredAt: at},
		Payload: &catalog.DeliveryAttempted{DeliveryID: id, Attempt: 1, At: at, StatusCode: 200, LatencyMS: 1,
			Outcome: domain.OutcomeDelivered, ResponseExcerpt: "ok"}}
}

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
		created[i] = createdAt(ids[i], body, uint64(i+1), base)
	}
	if err := p.Apply(ctx, created, created[n-1].Position); err != nil {
		b.Fatal(err)
	}
	batch := make([]events.Envelope, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		batch[0] = deliveredAt(ids[i], uint64(n+i+1), base)
		if err := p.Apply(ctx, batch, batch[0].Position); err != nil {
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
		batch[0] = createdAt(id, body, uint64(2*i+1), base)
		if err := p.Apply(ctx, batch, batch[0].Position); err != nil {
			b.Fatal(err)
		}
		batch[0] = deliveredAt(id, uint64(2*i+2), base)
		if err := p.Apply(ctx, batch, batch[0].Position); err != nil {
			b.Fatal(err)
		}
	}
}
