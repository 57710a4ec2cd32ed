package commandapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/commands"
)

func order(third string, goods string) map[string]any {
	return map[string]any{
		"third_order_id": third, "contact_person": "Ann", "contact_phone": "13800138000", "address": "1 Road",
		"items": []any{map[string]any{"goods_code": goods, "quantity": 2, "unit_price": 500}},
	}
}

func TestOrders(t *testing.T) {
	h := newHarness(t)
	g := h.do("POST", "/admin/v1/goods", map[string]any{"goods_code": "G-1", "goods_name": "Scale"}, asAdmin)
	expect(t, "create goods", g, http.StatusCreated, "0")
	if g.Data(t)["goods_code"] != "G-1" || g.Num(t, "goods_id") <= 0 {
		t.Fatalf("goods data: %s", g.Raw)
	}

	o := h.do("POST", "/open/v1/order/create", order("T-1", "G-1"), as(h.appA))
	expect(t, "create order", o, http.StatusCreated, "0")
	code, _ := o.Data(t)["order_code"].(string)
	if code == "" || o.Data(t)["created"] != true || o.Data(t)["order_time"] != testNow.Format(DateTime) {
		t.Fatalf("order data: %s", o.Raw)
	}
	// The same third_order_id and content is the same order.
	before := h.head()
	again := h.do("POST", "/open/v1/order/create", order("T-1", "G-1"), as(h.appA))
	if again.Status != http.StatusOK || again.Data(t)["order_code"] != code || again.Data(t)["created"] != false || h.head() != before {
		t.Fatalf("repeated order: %d %s", again.Status, again.Raw)
	}

	noOrders := h.appB
	noOrders.AppID, noOrders.AppKey, noOrders.Scopes = 9004, "key-no-orders", []string{"channel_users"}
	h.dir.Put(noOrders)
	h.refuses(t, []refusal{
		{"same third_order_id, other content", "POST", "/open/v1/order/create", func() map[string]any {
			b := order("T-1", "G-1")
			b["address"] = "2 Road"
			return b
		}(), as(h.appA), http.StatusConflict, "DUPLICATE_THIRD_ORDER_ID"},
		{"unknown goods", "POST", "/open/v1/order/create", order("T-2", "NOPE"), as(h.appA), http.StatusNotFound, "GOODS_NOT_FOUND"},
		{"no items", "POST", "/open/v1/order/create", map[string]any{"third_order_id": "T-3", "contact_person": "A", "contact_phone": "1", "address": "a"}, as(h.appA), http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
		{"scope not granted", "POST", "/open/v1/order/create", order("T-4", "G-1"), as(noOrders), http.StatusForbidden, "SCOPE_NOT_GRANTED"},
		{"goods code taken", "POST", "/admin/v1/goods", map[string]any{"goods_code": "G-1", "goods_name": "Other"}, asAdmin, http.StatusConflict, "GOODS_CODE_EXISTS"},
		{"goods without admin token", "POST", "/admin/v1/goods", map[string]any{"goods_code": "G-2", "goods_name": "X"}, nil, http.StatusUnauthorized, "HTTP_401"},
		{"approve unknown order", "POST", "/admin/v1/orders/NOPE/approve", nil, asAdmin, http.StatusNotFound, "ORDER_NOT_FOUND"},
		{"shipped callback without the internal token", "POST", "/open/internal/order/shipped-callback", map[string]any{"order_code": code, "logistics_company": "X", "tracking_number": "1"}, nil, http.StatusUnauthorized, "HTTP_401"},
		{"sandbox shipment test from production", "POST", "/open/v1/order/shipped-callback-test", map[string]any{"order_code": code}, as(h.appA), http.StatusForbidden, "SANDBOX_ONLY"},
	})

	ap := h.do("POST", "/admin/v1/orders/"+code+"/approve", nil, asAdmin)
	expect(t, "approve", ap, http.StatusOK, "0")
	h.refuses(t, []refusal{
		{"reject an approved order", "POST", "/admin/v1/orders/" + code + "/reject", map[string]any{"reason": "late"}, asAdmin, http.StatusConflict, "ILLEGAL_TRANSITION"},
	})

	// A sandbox app ships its own order for the test webhook; another app's
	// order is not found.
	sandbox := h.appB
	sandbox.AppID, sandbox.AppKey, sandbox.Environment = 9005, "key-sandbox", commands.EnvSandbox
	h.dir.Put(sandbox)
	so := h.do("POST", "/open/v1/order/create", order("S-1", "G-1"), as(sandbox))
	expect(t, "sandbox order", so, http.StatusCreated, "0")
	sandboxCode := so.Data(t)["order_code"].(string)
	other := sandbox
	other.AppID, other.AppKey = 9006, "key-sandbox-2"
	h.dir.Put(other)
	h.refuses(t, []refusal{
		{"another sandbox app's order", "POST", "/open/v1/order/shipped-callback-test", map[string]any{"order_code": sandboxCode}, as(other), http.StatusNotFound, "ORDER_NOT_FOUND"},
	})
	sh := h.do("POST", "/open/v1/order/shipped-callback-test", map[string]any{"order_code": sandboxCode}, as(sandbox))
	expect(t, "sandbox shipment", sh, http.StatusOK, "0")
	if sh.Data(t)["shipped"] != true || sh.Data(t)["order_code"] != sandboxCode {
		t.Fatalf("shipment data: %s", sh.Raw)
	}
}

func TestBenefitsVerifyUse(t *testing.T) {
	h := newHarness(t)
	item := h.do("POST", "/admin/v1/benefit-items", map[string]any{"name": "Checkup"}, asAdmin)
	expect(t, "benefit item", item, http.StatusCreated, "0")
	itemID := item.Num(t, "benefit_item_id")

	p := h.do("POST", "/open/v1/service-providers", map[string]any{"name": "Clinic", "type": "SERVICE_PROVIDER", "contact": "c@x"}, as(h.appA))
	expect(t, "register provider", p, http.StatusCreated, "0")
	providerID := p.Num(t, "provider_id")
	if p.Data(t)["status"] != commands.ProviderPending {
		t.Fatalf("provider data: %s", p.Raw)
	}
	h.refuses(t, []refusal{
		{"review decision unknown", "POST", "/admin/v1/service-providers/" + itoa(providerID) + "/review", map[string]any{"decision": "maybe"}, asAdmin, http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
		{"review unknown provider", "POST", "/admin/v1/service-providers/777777/review", map[string]any{"decision": "approve"}, asAdmin, http.StatusNotFound, "PROVIDER_NOT_FOUND"},
		{"operator provider for an unknown app", "POST", "/admin/v1/service-providers", map[string]any{"name": "C", "type": "CHANNEL_PARTNER", "contact": "c", "app_id": 123456}, asAdmin, http.StatusNotFound, "APP_NOT_FOUND"},
	})
	expect(t, "approve provider", h.do("POST", "/admin/v1/service-providers/"+itoa(providerID)+"/review", map[string]any{"decision": "approve"}, asAdmin), http.StatusOK, "0")
	expect(t, "provider items", h.do("PUT", "/admin/v1/service-providers/"+itoa(providerID)+"/benefit-items", map[string]any{"allowed_benefit_item_ids": []int64{itemID}}, asAdmin), http.StatusOK, "0")
	h.providers.mu.Lock()
	h.providers.providers[h.appA.AppID] = []int64{providerID}
	h.providers.mu.Unlock()

	expires := testNow.Add(30 * 24 * time.Hour).Format(DateTime)
	cards := h.do("POST", "/admin/v1/benefit-cards", map[string]any{"issuer_app_id": h.appA.AppID, "cards": []any{map[string]any{
		"card_number": "C00000000000001", "holder_name": "Ann Lee", "holder_phone": "13800138000", "expires_at": expires,
		"items": []any{map[string]any{"benefit_item_id": itemID, "quantity": 2}},
	}}}, asAdmin)
	expect(t, "issue card", cards, http.StatusCreated, "0")

	verify := map[string]any{"card_number": "C00000000000001", "benefit_item_id": itemID}
	v := h.do("POST", "/open/v1/benefit-cards/verify-use", verify, as(h.appA))
	expect(t, "verify-use", v, http.StatusOK, "0")
	d := v.Data(t)
	if v.Num(t, "remaining_quantity") != 1 || v.Num(t, "quantity_used") != 1 || d["card_number_masked"] == "C00000000000001" || d["card_number_masked"] == "" {
		t.Fatalf("verify data: %s", v.Raw)
	}
	if u := d["user_info"].(map[string]any); u["phone_masked"] == "13800138000" || u["name_masked"] == "Ann Lee" {
		t.Fatalf("user_info not masked: %s", v.Raw)
	}
	record := v.Num(t, "fulfillment_record_id")
	h.providers.mu.Lock()
	h.providers.issuers[record] = h.appA.AppID
	h.providers.mu.Unlock()

	h.refuses(t, []refusal{
		{"unknown card", "POST", "/open/v1/benefit-cards/verify-use", map[string]any{"card_number": "C00000000009999", "benefit_item_id": itemID}, as(h.appA), http.StatusNotFound, "CARD_NOT_FOUND"},
		{"no card number", "POST", "/open/v1/benefit-cards/verify-use", map[string]any{"benefit_item_id": itemID}, as(h.appA), http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
		{"an app that is no provider", "POST", "/open/v1/benefit-cards/verify-use", verify, as(h.appB), http.StatusForbidden, "SERVICE_PROVIDER_UNAUTHORIZED"},
		{"rating out of range", "POST", "/open/v1/benefit-cards/fulfillments/" + itoa(record) + "/rating", map[string]any{"rating": 9}, as(h.appA), http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
		{"batch issue by a non-partner", "POST", "/open/v1/benefit-cards/batch-issue", map[string]any{"cards": []any{}}, as(h.appB), http.StatusForbidden, "SERVICE_PROVIDER_UNAUTHORIZED"},
	})
	expect(t, "rate", h.do("POST", "/open/v1/benefit-cards/fulfillments/"+itoa(record)+"/rating", map[string]any{"rating": 5}, as(h.appA)), http.StatusOK, "0")
	h.refuses(t, []refusal{
		{"another app rates", "POST", "/open/v1/benefit-cards/fulfillments/" + itoa(record) + "/rating", map[string]any{"rating": 4}, as(h.appB), http.StatusNotFound, "FULFILLMENT_NOT_FOUND"},
		{"rated twice", "POST", "/open/v1/benefit-cards/fulfillments/" + itoa(record) + "/rating", map[string]any{"rating": 4}, as(h.appA), http.StatusConflict, "ALREADY_RATED"},
	})
	expect(t, "suspend item", h.do("POST", "/admin/v1/benefit-items/"+itoa(itemID)+"/suspend", nil, asAdmin), http.StatusOK, "0")
	h.refuses(t, []refusal{
		{"suspended item", "POST", "/open/v1/benefit-cards/verify-use", verify, as(h.appA), http.StatusUnprocessableEntity, "BENEFIT_ITEM_INACTIVE"},
	})
}
