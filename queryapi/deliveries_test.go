package queryapi

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/projections"
)

func TestDeliveryReads(t *testing.T) {
	h := newHarness(t)
	body := []byte(`{"event":"test.event","data":{"name":"Ann"}}`)
	h.dels.list = []projections.Delivery{
		{DeliveryID: "d-a1", AppID: h.appA.AppID, EventType: "test.event", Status: "DELIVERED", Body: body, Cursor: events.Position{Commit: 1, Prepare: 1}, CreatedAt: testNow, UpdatedAt: testNow},
		{DeliveryID: "d-b1", AppID: h.appB.AppID, EventType: "test.event", Status: "DELIVERED", Body: body, Cursor: events.Position{Commit: 2, Prepare: 2}, CreatedAt: testNow, UpdatedAt: testNow},
		{DeliveryID: "d-a2", AppID: h.appA.AppID, EventType: "test.event", Status: "PENDING", Cursor: events.Position{Commit: 3, Prepare: 3}, CreatedAt: testNow, UpdatedAt: testNow},
	}
	list := h.get("/open/v1/webhooks/deliveries", as(h.appA))
	expect(t, "partner deliveries", list, http.StatusOK, "0")
	ds := list.Data(t)["deliveries"].([]any)
	if len(ds) != 2 || ds[0].(map[string]any)["delivery_id"] != "d-a1" || ds[1].(map[string]any)["delivery_id"] != "d-a2" {
		t.Fatalf("an app's delivery log holds only its deliveries: %s", list.Raw)
	}
	one := h.get("/open/v1/webhooks/deliveries/d-a1", as(h.appA))
	expect(t, "partner delivery", one, http.StatusOK, "0")
	if p, _ := json.Marshal(one.Data(t)["payload"]); string(p) != `{"data":{"name":"Ann"},"event":"test.event"}` {
		t.Fatalf("the partner sees its own body: %s", one.Raw)
	}

	feed := h.get("/open/v1/webhooks/events?after="+httpapi.FormatCursor(events.Position{Commit: 1, Prepare: 1})+"&limit=1", as(h.appA))
	expect(t, "feed", feed, http.StatusOK, "0")
	fd := feed.Data(t)
	if evs := fd["events"].([]any); len(evs) != 1 || evs[0].(map[string]any)["delivery_id"] != "d-a2" || evs[0].(map[string]any)["payload"] != nil {
		t.Fatalf("feed after the first entry (an erased body reads null): %s", feed.Raw)
	}
	if fd["has_more"] != true || fd["next_cursor"] != "3-3" {
		t.Fatalf("feed paging: %s", feed.Raw)
	}

	// An operator sees any app's delivery, its body redacted unless revealed.
	adm := h.get("/admin/v1/deliveries/d-b1", asAdmin)
	expect(t, "operator delivery", adm, http.StatusOK, "0")
	if adm.Data(t)["payload"] != catalog.Redacted {
		t.Fatalf("operator saw the body unrevealed: %s", adm.Raw)
	}

	h.reads(t, []readCase{
		{"another app's delivery", "/open/v1/webhooks/deliveries/d-b1", as(h.appA), http.StatusNotFound, "DELIVERY_NOT_FOUND"},
		{"missing delivery", "/open/v1/webhooks/deliveries/d-x", as(h.appA), http.StatusNotFound, "DELIVERY_NOT_FOUND"},
		{"bad feed cursor", "/open/v1/webhooks/events?after=yesterday", as(h.appA), http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
		{"feed limit over 1000", "/open/v1/webhooks/events?limit=1001", as(h.appA), http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
		{"bad status filter", "/open/v1/webhooks/deliveries?status=nope", as(h.appA), http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
		{"unsigned", "/open/v1/webhooks/deliveries", nil, http.StatusUnauthorized, "HTTP_401"},
		{"operator list without token", "/admin/v1/deliveries", nil, http.StatusUnauthorized, "HTTP_401"},
	})
}
