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

// BenchmarkRebuildDeliveryCreated: what a rebuild does with one opened
// webhook.delivery.created event of the log (a third of a seeded log's
// events and most of its bytes) after decryption: the registry's decode
// and the deliveries projector's apply into the memory store, one event
// per batch. Its body is a rendered webhook of about 500 bytes, carried as
// an escaped JSON string as the log holds it. Single goroutine, so
// callgrind counts it exactly:
//
//	go test -c -o /tmp/m.test ./projections/memory
//	valgrind --tool=callgrind --toggle-collect='*BenchmarkRebuildDeliveryCreated*' /tmp/m.test -test.run '^$' -test.bench RebuildDeliveryCreated -test.benchtime 20000x
func BenchmarkRebuildDeliveryCreated(b *testing.B) {
	ctx := context.Background()
	reg := catalog.Registry()
	at := time.Date(2026, 12, 1, 0, 28, 51, 641189665, time.UTC)
	recs := make([]events.Recorded, b.N)
	for i := range recs {
		id := fmt.Sprintf("057d7abe-4fb6-54d7-a411-%012d", i)
		body := fmt.Sprintf(`{"event":"user.profile.updated","delivery_id":"%s","app_id":2,"occurred_at":"2026-12-01T00:28:51.641Z","data":{"open_user_id":%d,"channel_user_id":"seed-user-%d","changed":["nickname","gender"],"profile":{"name":"Li Lei","nickname":"%s","gender":"male","avatar":null,"phone":"+8613800000000","email":"user%d@example.com","birth_date":null}}}`,
			id, 100000+i, i, strings.Repeat("n", 100), i)
		ev, err := reg.Encode(catalog.DeliveryCreated{DeliveryID: id, AppID: 2, EndpointID: domain.DefaultEndpointID, Event: "user.profile.updated",
			SourceEventID: fmt.Sprintf("01a22f01-1c38-7d2e-a9c9-%012d", i), SourceStream: fmt.Sprintf("user-%d", 100000+i),
			SourcePosition: events.Position{Commit: uint64(2 * i), Prepare: uint64(2 * i)}, SourceRecordedAt: at, Body: body, Deliver: true},
			events.Metadata{AppID: 2, Actor: "dispatcher", OccurredAt: at})
		if err != nil {
			b.Fatal(err)
		}
		recs[i] = events.Recorded{ID: ev.ID, Type: ev.Type, Data: ev.Data, Meta: ev.Meta, Stream: "webhook-delivery",
			Position: events.Position{Commit: uint64(2*i + 1), Prepare: uint64(2*i + 1)}}
	}
	s := New()
	p := projections.DeliveriesProjector(s)
	batch := make([]events.Envelope, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		env, err := reg.Decode(recs[i])
		if err != nil {
			b.Fatal(err)
		}
		batch[0] = env
		if err := p.Apply(ctx, batch, recs[i].Position); err != nil {
			b.Fatal(err)
		}
	}
}
