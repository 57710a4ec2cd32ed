package catalog_test

import (
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// BenchmarkEncode measures Registry.Encode per hot event type (payload,
// metadata and event id), the work a command does for every event it
// appends and the dispatcher for every delivery it creates or attempts.
func BenchmarkEncode(b *testing.B) {
	s := func(v string) *string { return &v }
	n := func(v int64) *int64 { return &v }
	now := time.Now()
	member := catalog.Member{MemberID: 90001, AppUserID: "app-user-1", AppGroupID: 7, FamilyGroupID: 80001, Name: "Ada Lovelace",
		Relationship: "child", Gender: s("female"), BirthDate: s("2015-04-01"), Phone: s("+8613800000000"), IDType: s("id_card"),
		IDNumber: s("110101201504010000"), Height: n(120), Weight: n(25), BloodType: s("A"), IsDefault: true}
	profile := catalog.Profile{Name: "Grace Hopper", Nickname: s("grace"), Gender: "female", Phone: s("+8613900000000"), Email: s("g@example.com"), BirthDate: s("1980-12-09")}
	payloads := []events.Payload{
		catalog.ChannelUserBound{AppID: 7, ChannelUserID: "cu-1", OpenUserID: 10001},
		catalog.UserRegistered{AppID: 7, OpenUserID: 10001, ChannelUserID: "cu-1", Profile: profile, RegisteredAt: now},
		catalog.UserProfileUpdated{ChannelUserID: "cu-1", OpenUserID: 10001, Changed: []string{"name", "phone"}, Profile: profile},
		catalog.FamilyMemberCreated{ChannelUserID: "cu-1", OpenUserID: 10001, Member: member},
		catalog.FamilyMemberUpdated{ChannelUserID: "cu-1", OpenUserID: 10001, Changed: []string{"height"}, Member: member},
		catalog.FamilyMemberDeleted{ChannelUserID: "cu-1", OpenUserID: 10001, MemberID: 90001, AppUserID: "app-user-1", FamilyGroupID: 80001},
		catalog.DeliveryCreated{DeliveryID: "d-7-0190f3a1", AppID: 7, Event: "user.family_member.created", SourceEventID: "0190f3a1-0000-7000-8000-000000000001",
			SourceStream: "user-10001", SourcePosition: events.Position{Commit: 123456, Prepare: 123456}, SourceRecordedAt: now,
			Body: `{"event":"user.family_member.created","data":{"open_user_id":10001,"member":{"member_id":90001,"name":"Ada \u00e9"}}}`, Deliver: true},
		// As main's webhooks BenchmarkOutcomeEncode had it, for the comparison with its direct encoder.
		catalog.DeliveryAttempted{DeliveryID: "0192f0c8-1b2a-7c3d-8e4f-a5b6c7d8e9f0-1", Attempt: 1, At: now.UTC(), URL: "http://127.0.0.1:41234/hook",
			StatusCode: 200, LatencyMS: 1, Outcome: "delivered", ResponseExcerpt: "ok"},
		catalog.IdempotencyClaimed{AppID: 7, Method: "PUT", Path: "/v1/users/cu-1/family/members", BodySHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", ClaimedAt: now},
		catalog.IdempotencyCompleted{AppID: 7, Status: 201, ContentType: "application/json", SealedBody: "dk1:42:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0-P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn8", CompletedAt: now},
	}
	reg := catalog.Registry()
	meta := events.Metadata{AppID: 7, Actor: "app:7", RequestID: "req-1", OccurredAt: now}
	for _, p := range payloads {
		b.Run(p.EventType(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := reg.Encode(p, meta); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
