package harness

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// BacklogPrefix starts the ids AppendBacklog gives its deliveries.
const BacklogPrefix = "b0000000-"

// AppendBacklog records n deliveries of app straight in the log (never
// sent: the app is suspended or has no URL), the first pending of them
// pending, the rest skipped, and returns their ids in order.
func AppendBacklog(t testing.TB, p *Platform, appID int64, n, pending int) []string {
	t.Helper()
	ids := make([]string, n)
	for start := 0; start < n; start += 500 {
		var parts []events.StreamAppend
		for i := start; i < min(n, start+500); i++ {
			// UUID-shaped like the dispatcher's ids (the document says
			// format: uuid and the lint validates every recorded answer).
			ids[i] = fmt.Sprintf("%s%04x-4000-8000-%06x%06x", BacklogPrefix, appID&0xffff, appID&0xffffff, i)
			ev, err := p.Node.Registry.Encode(catalog.DeliveryCreated{
				DeliveryID: ids[i], AppID: appID, Event: "user.profile.updated", SourceEventID: ids[i],
				SourceStream: "bulk-source", SourceRecordedAt: time.Now().UTC(),
				Body: fmt.Sprintf(`{"event":"user.profile.updated","delivery_id":%q}`, ids[i]), Deliver: i < pending,
			}, events.Metadata{AppID: appID, Actor: "dispatcher", OccurredAt: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, events.StreamAppend{Stream: domain.DeliveryStream(ids[i]), Expected: events.NoStream(), Events: []events.Proposed{ev}})
		}
		if _, err := events.AppendMulti(t.Context(), p.Node.Events, parts...); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// ResendAll calls the bulk resend of app, following next_after to the
// end, and returns the deliveries queued and the calls it took.
func ResendAll(t testing.TB, p *Platform, appID int64) (queued, calls int) {
	t.Helper()
	after := ""
	for calls = 1; calls <= 100; calls++ {
		path := fmt.Sprintf("/admin/v1/apps/%d/deliveries/resend", appID)
		if after != "" {
			path += "?after=" + after
		}
		res := p.Admin("POST", path, nil)
		if res.Status != http.StatusAccepted {
			t.Fatalf("bulk resend: %d %s", res.Status, res.Raw)
		}
		var out struct {
			Queued    int    `json:"queued"`
			NextAfter string `json:"next_after"`
		}
		res.Data(t, &out)
		queued += out.Queued
		if out.NextAfter == "" {
			return queued, calls
		}
		after = out.NextAfter
	}
	t.Fatal("bulk resend still had more after 100 calls")
	return 0, 0
}
