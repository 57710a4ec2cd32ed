package webhooks

import (
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Given a stretch of the log, when a replay selects from it, then it takes
// exactly its app's events of its types, in its time range and from its
// start, each under the delivery id of that event to its endpoint, and
// never a test event.
func TestSelectReplay(t *testing.T) {
	reg := catalog.Registry()
	d := &Dispatcher{Registry: reg, Location: time.UTC}
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var recs []events.Recorded
	add := func(app int64, at time.Time, p events.Payload) events.Recorded {
		ev, err := reg.Encode(p, events.Metadata{AppID: app, Actor: "t", OccurredAt: at})
		if err != nil {
			t.Fatal(err)
		}
		n := uint64(len(recs) + 1)
		r := events.Recorded{ID: ev.ID, Stream: "user-1", Type: ev.Type, Position: events.Position{Commit: n, Prepare: n}, Created: at, Data: ev.Data, Meta: ev.Meta}
		recs = append(recs, r)
		return r
	}
	upd := catalog.UserProfileUpdated{ChannelUserID: "c", OpenUserID: 1, Changed: []string{"nickname"}}
	add(1, t0.Add(-time.Hour), upd)                                          // before since
	want1 := add(1, t0.Add(time.Minute), upd)                                // taken
	add(2, t0.Add(time.Minute), upd)                                         // another app
	add(1, t0.Add(2*time.Minute), catalog.AppWebhookTestRequested{AppID: 1}) // a test event
	add(1, t0.Add(3*time.Minute), catalog.FamilyMemberDeleted{OpenUserID: 1, ChannelUserID: "c", MemberID: 4})
	want2 := add(1, t0.Add(4*time.Minute), upd) // taken
	add(1, t0.Add(6*time.Minute), upd)          // after until

	since, until := t0, t0.Add(5*time.Minute)
	req := catalog.WebhookReplayRequested{ReplayID: 1, AppID: 1, EndpointID: 7, Events: []string{"user.profile.*"}, Since: &since, Before: &until}
	b, err := d.selectReplay(req, recs)
	if err != nil {
		t.Fatal(err)
	}
	if b.last != recs[len(recs)-1].Position || len(b.items) != 2 {
		t.Fatalf("selected %d events up to %v, want 2 up to the batch's end", len(b.items), b.last)
	}
	for i, w := range []events.Recorded{want1, want2} {
		c := b.items[i].created
		if c.DeliveryID != EndpointDeliveryID(1, 7, w.ID) || c.SourceEventID != w.ID || c.EndpointID != 7 || !c.Deliver || c.Event != "user.profile.updated" {
			t.Fatalf("item %d: %+v, want the delivery of %s to endpoint 7", i, c, w.ID)
		}
	}

	// From a feed cursor: nothing before the first entry's source.
	req = catalog.WebhookReplayRequested{ReplayID: 1, AppID: 1, EndpointID: domain.DefaultEndpointID, Events: []string{"*"}, From: want2.Position}
	if b, err = d.selectReplay(req, recs); err != nil || len(b.items) != 2 || b.items[0].created.DeliveryID != DeliveryID(1, want2.ID) {
		t.Fatalf("from %v: %+v (%v), want the two updates from there under their default ids", want2.Position, b.items, err)
	}
}

// Given a delivery, when a replay reaches it, then one erased with its
// person is passed over, one waiting for its attempt is left queued, and
// any other is resent.
func TestDecideReplayResend(t *testing.T) {
	for name, c := range map[string]struct {
		del            delivery
		resend, erased bool
	}{
		"delivered":   {delivery{created: &catalog.DeliveryCreated{Body: "{}"}, status: domain.DeliveryDelivered}, true, false},
		"abandoned":   {delivery{created: &catalog.DeliveryCreated{Body: "{}"}, status: domain.DeliveryAbandoned}, true, false},
		"skipped":     {delivery{created: &catalog.DeliveryCreated{Body: "{}"}, status: domain.DeliverySkipped}, true, false},
		"pending":     {delivery{created: &catalog.DeliveryCreated{Body: "{}"}, status: domain.DeliveryPending}, false, false},
		"erased":      {delivery{created: &catalog.DeliveryCreated{}, status: domain.DeliveryDelivered}, false, true},
		"erased, due": {delivery{created: &catalog.DeliveryCreated{}, status: domain.DeliveryPending}, false, true},
	} {
		if resend, erased := decideReplayResend(&c.del); resend != c.resend || erased != c.erased {
			t.Errorf("%s: resend %v erased %v, want %v %v", name, resend, erased, c.resend, c.erased)
		}
	}
}
