package privacy

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
)

// memberUpserted is a member update as a member upsert writes it: the
// member's ten personal paths, four of them set.
const memberUpserted = `{"channel_user_id":"u-1","open_user_id":7,"member":{"member_id":31,"app_user_id":"m-3","app_group_id":10,` +
	`"family_group_id":12,"name":"n-1234","relationship":"SON","gender":null,"birth_date":null,"phone":"13812345678","id_type":null,` +
	`"id_number":null,"height":172,"weight":null,"blood_type":null,"is_default":false},"changed":["name"]}`

// BenchmarkSeal seals a member upsert's event, as every member upsert does
// (ns and allocations per event):
//
//	go test -run '^$' -bench Seal -benchmem ./privacy
func BenchmarkSeal(b *testing.B) {
	s, _ := newStore(b)
	ctx := context.Background()
	id := uuid.NewString()
	if _, err := s.Seal(ctx, "user-7", id, "user.family_member.updated", []byte(memberUpserted)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Seal(ctx, "user-7", id, "user.family_member.updated", []byte(memberUpserted)); err != nil {
			b.Fatal(err)
		}
	}
}

// deliveryCreated is the delivery record of a member upsert's webhook, as
// the dispatcher writes it: the body (a personal field) is the webhook's
// JSON text, so its subject comes from the body's open_user_id.
var deliveryCreated = func() []byte {
	body, _ := json.Marshal(`{"event_id":"0b8e5c1e-6f0e-4c55-9d8a-0f8d2b7c1a11","event_type":"user.family_member.updated","app_id":3,` +
		`"open_user_id":7,"occurred_at":"2026-11-24T01:02:03.456789Z","data":` + memberUpserted + `}`)
	return []byte(`{"delivery_id":"5d3c8f0a-6a8e-4d7e-9f2b-1c1a2b3c4d5e","app_id":3,"event":"user.family_member.updated",` +
		`"source_event_id":"0b8e5c1e-6f0e-4c55-9d8a-0f8d2b7c1a11","source_stream":"user-7","source_position":{"commit":123456,"prepare":123456},` +
		`"source_recorded_at":"2026-11-24T01:02:03.456789Z","body":` + string(body) + `,"deliver":true,"dead_letter":false}`)
}()

// BenchmarkSubject names the key of a delivery record with the direct
// reader and with encoding/json (main's path before the direct reader),
// in the same run:
//
//	go test -run '^$' -bench Subject -benchmem ./privacy
func BenchmarkSubject(b *testing.B) {
	typ := "webhook.delivery.created"
	if got, want := Subject("delivery-x", typ, deliveryCreated), subjectJSON("delivery-x", typ, deliveryCreated); got != want || got != "user-7" {
		b.Fatalf("subject %s, encoding/json %s", got, want)
	}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Subject("delivery-x", typ, deliveryCreated)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			subjectJSON("delivery-x", typ, deliveryCreated)
		}
	})
}

// BenchmarkLocate finds the personal values of a member upsert's two
// sealed events, as every seal (and every read of an event this process did
// not append) does first:
//
//	go test -run '^$' -bench Locate -benchmem ./privacy
func BenchmarkLocate(b *testing.B) {
	s, _ := newStore(b)
	type doc struct {
		name, typ string
		data      []byte
	}
	docs := []doc{{"user.family_member.updated", "user.family_member.updated", []byte(memberUpserted)},
		{"webhook.delivery.created", "webhook.delivery.created", deliveryCreated}}
	// Opening a stored event (every replayed one) locates its envelopes.
	for _, d := range docs[:2] {
		sealed, err := s.Seal(context.Background(), "user-7", uuid.NewString(), d.typ, d.data)
		if err != nil {
			b.Fatal(err)
		}
		docs = append(docs, doc{"sealed " + d.typ, d.typ, sealed})
	}
	for _, ev := range docs {
		b.Run(ev.name, func(b *testing.B) {
			fields := personal(ev.typ)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := locate(ev.data, fields); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSealDelivery seals a member upsert's delivery record, as the
// dispatcher's append does for every webhook (ns and allocations per
// record).
func BenchmarkSealDelivery(b *testing.B) {
	s, _ := newStore(b)
	ctx := context.Background()
	id := uuid.NewString()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Seal(ctx, "delivery-5d3c8f0a", id, "webhook.delivery.created", deliveryCreated); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendAndFollow appends a member upsert's two sealed events
// (the member update, its webhook's delivery record) and reads them back
// as the first follower the commit wakes does (a subscription's Next): the
// write path's whole privacy cost per member upsert, minus the key fetch.
//
//	go test -run '^$' -bench AppendAndFollow -benchmem ./privacy
func BenchmarkAppendAndFollow(b *testing.B) {
	s, _ := newStore(b)
	ctx := context.Background()
	sub, err := s.SubscribeAll(ctx, events.Position{})
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Append(ctx, "user-7", events.Any(), events.Proposed{ID: uuid.NewString(), Type: "user.family_member.updated", Data: []byte(memberUpserted)}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Append(ctx, "delivery-x", events.Any(), events.Proposed{ID: uuid.NewString(), Type: "webhook.delivery.created", Data: deliveryCreated}); err != nil {
			b.Fatal(err)
		}
		for range 2 {
			rec, err := sub.Next(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if bytes.Contains(rec.Data, []byte(envPrefix)) {
				b.Fatalf("%s read sealed", rec.Type)
			}
		}
	}
}
