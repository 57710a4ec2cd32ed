package projections_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	evmemory "github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/projections"
)

// LogBodies reads each delivery's body from its webhook.delivery.created
// event, byte for byte, an erased one (null in the log) as empty, and
// refuses a position that holds another event.
func TestLogBodiesReadTheCreatedEventsBodies(t *testing.T) {
	ctx := context.Background()
	reg := catalog.Registry()
	log := evmemory.New()
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var positions []events.Position
	written := []string{`{"event":"user.registered","delivery_id":"d-0","app_id":1,"x":"\u00e9\n` + "\u00e9\n" + `"}`, ""}
	for i, body := range written {
		ev, err := reg.Encode(catalog.DeliveryCreated{DeliveryID: "d-" + strconv.Itoa(i), AppID: 1, EndpointID: domain.DefaultEndpointID,
			Event: "user.registered", Body: body, Deliver: true}, events.Metadata{AppID: 1, OccurredAt: at})
		if err != nil {
			t.Fatal(err)
		}
		res, err := log.Append(ctx, "webhook-delivery-"+ev.ID, events.NoStream(), ev)
		if err != nil {
			t.Fatal(err)
		}
		positions = append(positions, res.Position)
	}
	bodies, err := projections.LogBodies{Log: log, Registry: reg}.DeliveryBodies(ctx, []events.Position{positions[1], positions[0]})
	if err != nil {
		t.Fatal(err)
	}
	if string(bodies[1]) != written[0] || bodies[0] == nil || len(bodies[0]) != 0 {
		t.Fatalf("bodies read %q", bodies)
	}
	other, err := reg.Encode(&catalog.UserErased{OpenUserID: 7}, events.Metadata{OccurredAt: at})
	if err != nil {
		t.Fatal(err)
	}
	res, err := log.Append(ctx, "user-7", events.Any(), other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (projections.LogBodies{Log: log, Registry: reg}).DeliveryBodies(ctx, []events.Position{res.Position}); err == nil {
		t.Fatal("a position of another event read as a delivery's body")
	}
}
