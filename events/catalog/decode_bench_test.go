package catalog_test

import (
	"testing"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// BenchmarkDecode measures Registry.Decode per hot event type on the bytes
// Encode writes, the work every follower repeats for every event it handles.
func BenchmarkDecode(b *testing.B) {
	s := func(v string) *string { return &v }
	n := func(v int64) *int64 { return &v }
	member := catalog.Member{MemberID: 90001, AppUserID: "app-user-1", AppGroupID: 7, FamilyGroupID: 80001, Name: "Ada Lovelace",
		Relationship: "child", Gender: s("female"), BirthDate: s("2015-04-01"), Phone: s("+8613800000000"), IDType: s("id_card"),
		IDNumber: s("110101201504010000"), Height: n(120), Weight: n(25), BloodType: s("A"), IsDefault: true}
	profile := catalog.Profile{Name: "Grace Hopper", Nickname: s("grace"), Gender: "female", Phone: s("+8613900000000"), Email: s("g@example.com"), BirthDate: s("1980-12-09")}
	payloads := []events.Payload{
		catalog.UserRegistered{AppID: 7, OpenUserID: 10001, ChannelUserID: "cu-1", Profile: profile},
		catalog.UserProfileUpdated{ChannelUserID: "cu-1", OpenUserID: 10001, Changed: []string{"name", "phone"}, Profile: profile},
		catalog.FamilyMemberCreated{ChannelUserID: "cu-1", OpenUserID: 10001, Member: member},
		catalog.FamilyMemberUpdated{ChannelUserID: "cu-1", OpenUserID: 10001, Changed: []string{"height"}, Member: member},
		catalog.FamilyMemberDeleted{ChannelUserID: "cu-1", OpenUserID: 10001, MemberID: 90001, AppUserID: "app-user-1", FamilyGroupID: 80001},
	}
	reg := catalog.Registry()
	for _, p := range payloads {
		ev, err := reg.Encode(p, events.Metadata{AppID: 7, Actor: "app:7", RequestID: "req-1"})
		if err != nil {
			b.Fatal(err)
		}
		rec := events.Recorded{ID: ev.ID, Type: ev.Type, Data: ev.Data, Meta: ev.Meta, Stream: "user-10001"}
		b.Run(p.EventType(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := reg.Decode(rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
