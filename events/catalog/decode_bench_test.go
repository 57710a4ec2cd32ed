package catalog

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

// decodeBenchRecords is n deliveries of a rendered webhook and n
// registrations, encoded by the registry with every metadata field set,
// as a seeded log's most frequent events carry them.
func decodeBenchRecords(b *testing.B, n int) []events.Recorded {
	reg := Registry()
	at := time.Date(2026, 12, 1, 0, 28, 51, 641189665, time.UTC)
	recs := make([]events.Recorded, 0, 2*n)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("057d7abe-4fb6-54d7-a411-%012d", i)
		body := fmt.Sprintf(`{"event":"user.profile.updated","delivery_id":"%s","app_id":2,"occurred_at":"2026-12-01T00:28:51.641Z","data":{"open_user_id":%d,"channel_user_id":"seed-user-%d","changed":["nickname","gender"],"profile":{"name":"Li Lei","nickname":"%s","gender":"male","avatar":null,"phone":"+8613800000000","email":"user%d@example.com","birth_date":null}}}`,
			id, 100000+i, i, strings.Repeat("n", 100), i)
		meta := events.Metadata{AppID: 2, Actor: "app:2", RequestID: fmt.Sprintf("0b1c2d3e-4f50-6172-8394-%012d", i), Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", OccurredAt: at}
		ev, err := reg.Encode(DeliveryCreated{DeliveryID: id, AppID: 2, EndpointID: 1, Event: "user.profile.updated",
			SourceEventID: fmt.Sprintf("01a22f01-1c38-7d2e-a9c9-%012d", i), SourceStream: fmt.Sprintf("user-%d", 100000+i),
			SourcePosition: events.Position{Commit: uint64(2 * i), Prepare: uint64(2 * i)}, SourceRecordedAt: at, Body: body, Deliver: true}, meta)
		if err != nil {
			b.Fatal(err)
		}
		recs = append(recs, events.Recorded{ID: ev.ID, Type: ev.Type, Data: ev.Data, Meta: ev.Meta})
		nick, bd := "n", "1990-01-02"
		ev, err = reg.Encode(UserRegistered{AppID: 2, OpenUserID: int64(100000 + i), ChannelUserID: fmt.Sprintf("seed-user-%d", i),
			Profile: Profile{Name: "Li Lei", Nickname: &nick, Gender: "male", BirthDate: &bd}, RegisteredAt: at}, meta)
		if err != nil {
			b.Fatal(err)
		}
		recs = append(recs, events.Recorded{ID: ev.ID, Type: ev.Type, Data: ev.Data, Meta: ev.Meta})
	}
	return recs
}

// decodeAll is the measured loop of BenchmarkRegistryDecode (callgrind's
// --toggle-collect names it).
//
//go:noinline
func decodeAll(b *testing.B, reg *events.Registry, recs []events.Recorded) {
	for _, r := range recs {
		if _, err := reg.Decode(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRegistryDecode: the registry's decode of a delivery and of a
// registration (one of each per op), metadata included, without the
// encoding in its count:
//
//	go test -c -o /tmp/c.test ./events/catalog
//	GOGC=off GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --toggle-collect='*decodeAll*' \
//	  /tmp/c.test -test.run '^$' -test.bench RegistryDecode -test.benchtime 5000x
func BenchmarkRegistryDecode(b *testing.B) {
	recs := decodeBenchRecords(b, b.N)
	reg := Registry()
	b.ReportAllocs()
	b.ResetTimer()
	decodeAll(b, reg, recs)
}
