package webhooks

import (
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// user.erased names the person by open_user_id alone: an old event that
// still carries the partner's channel_user_id, and the operator's reason,
// stay out of the body, so the notice can never carry what the erasure
// destroyed.
func TestUserErasedCarriesIdsOnly(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	env := events.Envelope{Recorded: events.Recorded{ID: "evt-1", Type: "user.erased", Stream: "user-1001"},
		Payload:  &catalog.UserErased{AppID: 7, OpenUserID: 1001, ChannelUserID: "li@example.com", Reason: "PIPL ticket 9", ErasedBy: "operator:2", ErasedAt: at},
		Metadata: events.Metadata{AppID: 7, OccurredAt: at}}
	r, ok := Render(env, time.FixedZone("CST", 8*3600))
	if !ok || r.Event != "user.erased" || r.AppID != 7 {
		t.Fatalf("rendered %v %+v", ok, r)
	}
	want := `{"event":"user.erased","delivery_id":"` + r.id(0, "evt-1") + `","app_id":7,"open_user_id":1001,"occurred_at":"2026-11-29T18:00:00+08:00",` +
		`"data":{"erased_at":"2026-11-29T18:00:00+08:00","acknowledge_path":"/open/v1/erasures/1001/acknowledge"}}`
	if string(r.Body) != want {
		t.Fatalf("body\n%s\nwant\n%s", r.Body, want)
	}
	for _, leaked := range []string{"li@example.com", "PIPL", "operator:2"} {
		if strings.Contains(string(r.Body), leaked) {
			t.Fatalf("user.erased carries %q", leaked)
		}
	}
}
