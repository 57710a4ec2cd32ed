package openapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// newApp creates an app through the operator API and returns its client.
func (c *client) newApp(name, environment string) *client {
	c.t.Helper()
	var creds struct {
		AppID     int64  `json:"app_id"`
		AppKey    string `json:"app_key"`
		AppSecret string `json:"app_secret"`
	}
	c.expect(c.admin("POST", "/admin/v1/apps", map[string]any{"name": name, "environment": environment, "scopes": []string{"channel_users", "orders", "health_reports", "daily_report", "webhooks", "benefits", "plugin"}}), 201, 0).data(c.t, &creds)
	return &client{t: c.t, base: c.base, http: c.http, appID: creds.AppID, appKey: creds.AppKey, secret: creds.AppSecret}
}

// internal sends a request with the internal (shipping system) token.
func (c *client) internal(method, path, token string, body any) reply {
	c.t.Helper()
	return c.bearer(method, path, token, body)
}

// eventually retries cond for a while; the read models catch up with
// operator writes asynchronously.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

const big = 1 << 20

func tooLarge() string { return `{"x":"` + strings.Repeat("a", big) + `"}` }

type orderView struct {
	OrderCode        string  `json:"order_code"`
	OrderStatus      string  `json:"order_status"`
	LogisticsCompany *string `json:"logistics_company"`
	ShippedAt        *string `json:"shipped_at"`
	RejectReason     *string `json:"reject_reason"`
	Items            []struct {
		ID             int64    `json:"id"`
		ShippingStatus string   `json:"shipping_status"`
		DeviceSNs      []string `json:"device_sns"`
	} `json:"items"`
}

// orderTraffic drives the goods catalog, order creation and detail, the
// review and shipment routes (operator, internal and sandbox), and reads
// the order.shipped events back from the feed. c is a sandbox app with
// the user openUserID; other is another sandbox app.
func orderTraffic(t *testing.T, c, other *client, openUserID int64) {
	// Goods.
	const goods = "/admin/v1/goods"
	c.expect(c.send("POST", goods, map[string]any{"goods_code": "X", "goods_name": "X"}, nil), 401, "HTTP_401")
	c.expect(c.admin("POST", goods, `{`), 400, "HTTP_400")
	c.expect(c.admin("POST", goods, tooLarge()), 413, "PAYLOAD_TOO_LARGE")
	c.expect(c.admin("POST", goods, map[string]any{"goods_code": " ", "goods_name": 5}), 422, "VALIDATION_ERROR")
	c.expect(c.admin("POST", goods, map[string]any{"goods_code": "BP-100", "goods_name": "Monitor"}), 201, 0)
	c.expect(c.admin("POST", goods, map[string]any{"goods_code": "RING-1", "goods_name": "SpO2 ring"}), 201, 0)
	c.expect(c.admin("POST", goods, map[string]any{"goods_code": "OLD-1", "goods_name": "Old scale"}), 201, 0)
	c.expect(c.admin("POST", goods, map[string]any{"goods_code": "BP-100", "goods_name": "again"}), 409, "GOODS_CODE_EXISTS")
	c.expect(c.admin("PATCH", goods+"/BP-100", map[string]any{"goods_name": "Blood pressure monitor"}), 200, 0)
	c.expect(c.admin("PATCH", goods+"/BP-100", map[string]any{"goods_name": nil, "active": nil}), 200, 0)
	c.expect(c.admin("PATCH", goods+"/BP-100", map[string]any{"goods_name": ""}), 422, "VALIDATION_ERROR")
	c.expect(c.admin("PATCH", goods+"/BP-100", ``), 400, "HTTP_400")
	c.expect(c.admin("PATCH", goods+"/NOPE", map[string]any{"active": false}), 404, "GOODS_NOT_FOUND")
	c.expect(c.admin("POST", goods+"/OLD-1/deactivate", nil), 200, 0)
	c.expect(c.admin("POST", goods+"/OLD-1/deactivate", nil), 200, 0)
	c.expect(c.admin("POST", goods+"/NOPE/activate", nil), 404, "GOODS_NOT_FOUND")
	c.expect(c.send("POST", goods+"/OLD-1/activate", nil, nil), 401, "HTTP_401")
	c.expect(c.admin("POST", goods+"/OLD-1/activate", tooLarge()), 413, "PAYLOAD_TOO_LARGE")
	c.expect(c.admin("GET", goods, nil), 200, 0)
	c.expect(c.send("GET", goods, nil, nil), 401, "HTTP_401")

	// Creation.
	const create = "/open/v1/order/create"
	body := func(third string, items ...any) map[string]any {
		return map[string]any{"third_order_id": third, "contact_person": "Li Lei", "contact_phone": "13812345678", "address": "Beijing", "items": items}
	}
	item := func(code string, qty int) map[string]any {
		return map[string]any{"goods_code": code, "quantity": qty, "unit_price": 12345}
	}
	first := body("T-1", item("BP-100", 1), item("RING-1", 2))
	first["user_id"], first["area_code"], first["area_text"], first["postage_policy"] = openUserID, "110105", nil, "PAID_SHIPPING"
	c.expect(c.send("POST", create, first, nil), 401, "HTTP_401")
	c.expect(c.partner("POST", create, `[1]`), 400, "HTTP_400")
	c.expect(c.partner("POST", create, tooLarge()), 413, "PAYLOAD_TOO_LARGE")
	c.expect(c.partner("POST", create, map[string]any{"third_order_id": 1, "contact_phone": "123", "logistics_type": "PIGEON"}), 422, "VALIDATION_ERROR")
	many := []any{}
	for range 101 {
		many = append(many, item("BP-100", 1))
	}
	c.expect(c.partner("POST", create, body("T-many", many...)), 422, "VALIDATION_ERROR")
	c.expect(c.partner("POST", create, body("T-none")), 422, "VALIDATION_ERROR")
	var created, again struct {
		ID        int64  `json:"id"`
		OrderCode string `json:"order_code"`
		OrderTime string `json:"order_time"`
		Created   bool   `json:"created"`
	}
	c.expect(c.partner("POST", create, first), 201, 0).data(t, &created)
	c.expect(c.partner("POST", create, first), 200, 0).data(t, &again)
	if !created.Created || again.Created || again.OrderCode != created.OrderCode || again.OrderTime != created.OrderTime {
		t.Fatalf("repeat: %+v then %+v", created, again)
	}
	c.expect(c.partner("POST", create, body("T-1", item("BP-100", 1))), 409, "DUPLICATE_THIRD_ORDER_ID")
	c.expect(c.partner("POST", create, body("T-old", item("OLD-1", 1))), 404, "GOODS_NOT_FOUND")
	c.expect(c.partner("POST", create, body("T-nope", item("NOPE", 1))), 404, "GOODS_NOT_FOUND")
	stranger := body("T-user", item("BP-100", 1))
	stranger["user_id"] = 999999
	c.expect(c.partner("POST", create, stranger), 404, "USER_NOT_FOUND")

	// Detail, for the partner and the operator.
	detail := "/open/v1/order/detail?order_code=" + created.OrderCode
	var d orderView
	c.expect(c.partner("GET", detail, nil), 200, 0).data(t, &d)
	if d.OrderStatus != "PENDING_REVIEW" || len(d.Items) != 2 || d.LogisticsCompany != nil || d.ShippedAt != nil {
		t.Fatalf("new order %+v", d)
	}
	c.expect(c.partner("GET", "/open/v1/order/detail", nil), 422, "VALIDATION_ERROR")
	c.expect(c.partner("GET", "/open/v1/order/detail?order_code=PO2024010199", nil), 404, "ORDER_NOT_FOUND")
	c.expect(c.send("GET", detail, nil, nil), 401, "HTTP_401")
	other.expect(other.partner("GET", detail, nil), 404, "ORDER_NOT_FOUND")
	c.expect(c.admin("GET", fmt.Sprintf("/admin/v1/orders?app_id=%d&status=PENDING_REVIEW&limit=10", c.appID), nil), 200, 0)
	c.expect(c.admin("GET", "/admin/v1/orders", nil), 200, 0)
	c.expect(c.admin("GET", "/admin/v1/orders?limit=0&after=-1", nil), 422, "VALIDATION_ERROR")
	c.expect(c.send("GET", "/admin/v1/orders", nil, nil), 401, "HTTP_401")
	c.expect(c.admin("GET", "/admin/v1/orders/"+created.OrderCode, nil), 200, 0)
	c.expect(c.admin("GET", "/admin/v1/orders/PO2024010199", nil), 404, "ORDER_NOT_FOUND")

	// Review and shipment by the operator.
	orders := "/admin/v1/orders/" + created.OrderCode
	partial := map[string]any{"logistics_company": "SF", "tracking_number": "SF100",
		"items": []any{map[string]any{"item_id": d.Items[0].ID, "device_sns": []string{"SN-A"}}}}
	c.expect(c.admin("POST", orders+"/ship", partial), 409, "ILLEGAL_TRANSITION")
	c.expect(c.send("POST", orders+"/approve", nil, nil), 401, "HTTP_401")
	c.expect(c.admin("POST", orders+"/approve", `[]`), 400, "HTTP_400")
	c.expect(c.admin("POST", orders+"/approve", map[string]any{"reason": strings.Repeat("r", 201)}), 422, "VALIDATION_ERROR")
	c.expect(c.admin("POST", "/admin/v1/orders/PO2024010199/approve", nil), 404, "ORDER_NOT_FOUND")
	c.expect(c.admin("POST", orders+"/approve", nil), 200, 0)
	c.expect(c.admin("POST", orders+"/approve", nil), 409, "ILLEGAL_TRANSITION")
	c.expect(c.admin("POST", orders+"/reject", map[string]any{"reason": "late"}), 409, "ILLEGAL_TRANSITION")
	c.expect(c.admin("POST", orders+"/ship", map[string]any{"logistics_company": "SF", "tracking_number": "SF1",
		"items": []any{map[string]any{"item_id": d.Items[0].ID, "device_sns": []string{"a", "b"}}}}), 422, "SHIPMENT_MISMATCH")
	c.expect(c.admin("POST", orders+"/ship", map[string]any{"logistics_company": "SF", "tracking_number": "SF1",
		"items": []any{map[string]any{"item_id": 999999}}}), 422, "SHIPMENT_MISMATCH")
	c.expect(c.admin("POST", orders+"/ship", map[string]any{"tracking_number": strings.Repeat("9", 65)}), 422, "VALIDATION_ERROR")
	c.expect(c.admin("POST", orders+"/ship", ``), 400, "HTTP_400")
	c.expect(c.admin("POST", orders+"/ship", tooLarge()), 413, "PAYLOAD_TOO_LARGE")
	c.expect(c.admin("POST", "/admin/v1/orders/nope/ship", partial), 404, "ORDER_NOT_FOUND")
	c.expect(c.admin("POST", orders+"/ship", partial), 200, 0)
	c.expect(c.admin("POST", orders+"/ship", partial), 409, "ILLEGAL_TRANSITION")
	eventually(t, "the partial shipment in the order detail", func() bool {
		c.expect(c.partner("GET", detail, nil), 200, 0).data(t, &d)
		return d.OrderStatus == "PARTIALLY_SHIPPED"
	})
	if d.LogisticsCompany == nil || d.ShippedAt == nil || d.Items[0].ShippingStatus != "SHIPPED" || len(d.Items[0].DeviceSNs) != 1 {
		t.Fatalf("after a partial shipment %+v", d)
	}

	// The rest through the shipping system's internal callback.
	const callback = "/open/internal/order/shipped-callback"
	rest := map[string]any{"order_code": created.OrderCode, "logistics_company": "SF", "tracking_number": "SF101",
		"items": []any{map[string]any{"item_id": d.Items[1].ID, "device_sns": []string{"R1", "R2"}}}}
	c.expect(c.send("POST", callback, rest, nil), 401, "HTTP_401")
	c.expect(c.internal("POST", callback, adminToken, rest), 401, "HTTP_401")
	c.expect(c.internal("POST", callback, internalToken, `{`), 400, "HTTP_400")
	c.expect(c.internal("POST", callback, internalToken, tooLarge()), 413, "PAYLOAD_TOO_LARGE")
	c.expect(c.internal("POST", callback, internalToken, map[string]any{"items": "all"}), 422, "VALIDATION_ERROR")
	c.expect(c.internal("POST", callback, internalToken, map[string]any{"order_code": "PO2024010199", "logistics_company": "SF", "tracking_number": "1"}), 404, "ORDER_NOT_FOUND")
	c.expect(c.internal("POST", callback, internalToken, rest), 200, 0)
	c.expect(c.internal("POST", callback, internalToken, rest), 409, "ILLEGAL_TRANSITION")
	eventually(t, "the complete shipment in the order detail", func() bool {
		c.expect(c.partner("GET", detail, nil), 200, 0).data(t, &d)
		return d.OrderStatus == "SHIPPED"
	})

	// A rejected order.
	var second struct {
		OrderCode string `json:"order_code"`
	}
	c.expect(c.partner("POST", create, body("T-2", item("RING-1", 1))), 201, 0).data(t, &second)
	c.expect(c.admin("POST", "/admin/v1/orders/"+second.OrderCode+"/reject", map[string]any{"reason": "out of stock"}), 200, 0)
	c.expect(c.admin("POST", "/admin/v1/orders/"+second.OrderCode+"/ship", map[string]any{"logistics_company": "SF", "tracking_number": "1"}), 409, "ILLEGAL_TRANSITION")
	eventually(t, "the rejection in the order detail", func() bool {
		c.expect(c.partner("GET", "/open/v1/order/detail?order_code="+second.OrderCode, nil), 200, 0).data(t, &d)
		return d.OrderStatus == "REJECTED"
	})
	if d.RejectReason == nil || *d.RejectReason != "out of stock" {
		t.Fatalf("rejected order %+v", d)
	}

	// The sandbox shipment test: approves and ships the caller's own order.
	const test = "/open/v1/order/shipped-callback-test"
	var third struct {
		OrderCode string `json:"order_code"`
	}
	c.expect(c.partner("POST", create, body("T-3", item("BP-100", 1), item("RING-1", 1))), 201, 0).data(t, &third)
	c.expect(c.send("POST", test, map[string]any{"order_code": third.OrderCode}, nil), 401, "HTTP_401")
	c.expect(c.partner("POST", test, ``), 400, "HTTP_400")
	c.expect(c.partner("POST", test, tooLarge()), 413, "PAYLOAD_TOO_LARGE")
	c.expect(c.partner("POST", test, map[string]any{}), 422, "VALIDATION_ERROR")
	other.expect(other.partner("POST", test, map[string]any{"order_code": third.OrderCode}), 404, "ORDER_NOT_FOUND")
	c.expect(c.partner("POST", test, map[string]any{"order_code": third.OrderCode}), 200, 0)
	c.expect(c.partner("POST", test, map[string]any{"order_code": third.OrderCode}), 409, "ILLEGAL_TRANSITION")
	c.expect(c.partner("POST", test, map[string]any{"order_code": second.OrderCode}), 409, "ILLEGAL_TRANSITION")
	c.expect(c.partner("GET", "/open/v1/order/detail?order_code="+third.OrderCode, nil), 200, 0).data(t, &d)
	if d.OrderStatus != "SHIPPED" {
		t.Fatalf("after the sandbox test %+v", d)
	}
	prod := c.newApp("production buyer", "production")
	prod.expect(prod.partner("POST", test, map[string]any{"order_code": third.OrderCode}), 403, "SANDBOX_ONLY")

	// Three shipments, three order.shipped events in the feed, whose
	// payloads the validating transport checks against the document.
	shipped := 0
	eventually(t, "three order.shipped events in the feed", func() bool {
		shipped = 0
		after := ""
		for {
			var page feedPage
			c.expect(c.partner("GET", "/open/v1/webhooks/events?limit=1000&after="+after, nil), 200, 0).data(t, &page)
			for _, e := range page.Events {
				if e.Event == "order.shipped" {
					shipped++
				}
			}
			after = page.NextCursor
			if !page.HasMore {
				return shipped == 3
			}
		}
	})
	var page deliveryPage
	c.expect(c.partner("GET", "/open/v1/webhooks/deliveries?event=order.shipped", nil), 200, 0).data(t, &page)
	if len(page.Deliveries) != 3 {
		t.Fatalf("order.shipped deliveries %+v", page)
	}
	c.expect(c.partner("GET", "/open/v1/webhooks/deliveries/"+page.Deliveries[0].DeliveryID, nil), 200, 0)
}

// onboardingTraffic drives the onboarding review and the API scopes,
// including the 403 SCOPE_NOT_GRANTED of scheme M, scheme H and the
// daily report.
func onboardingTraffic(t *testing.T, c *client) {
	sandbox := c.newApp("onboarding", "sandbox")
	review := fmt.Sprintf("/admin/v1/apps/%d/review", sandbox.appID)
	c.expect(c.send("POST", review, map[string]any{"decision": "approve"}, nil), 401, "HTTP_401")
	c.expect(c.admin("POST", review, `{`), 400, "HTTP_400")
	c.expect(c.admin("POST", review, tooLarge()), 413, "PAYLOAD_TOO_LARGE")
	c.expect(c.admin("POST", review, map[string]any{"decision": "maybe"}), 422, "VALIDATION_ERROR")
	c.expect(c.admin("POST", review, map[string]any{"decision": "approve", "notes": strings.Repeat("n", 501)}), 422, "VALIDATION_ERROR")
	c.expect(c.admin("POST", "/admin/v1/apps/abc/review", map[string]any{"decision": "approve"}), 422, "VALIDATION_ERROR")
	c.expect(c.admin("POST", "/admin/v1/apps/999999/review", map[string]any{"decision": "approve"}), 404, "APP_NOT_FOUND")
	var approved struct {
		AppID      int64  `json:"app_id"`
		Decision   string `json:"decision"`
		Production struct {
			AppID       int64  `json:"app_id"`
			AppKey      string `json:"app_key"`
			AppSecret   string `json:"app_secret"`
			Environment string `json:"environment"`
		} `json:"production"`
	}
	c.expect(c.admin("POST", review, map[string]any{"decision": "approve", "notes": "documents checked"}), 200, 0).data(t, &approved)
	if approved.Production.AppID == sandbox.appID || approved.Production.Environment != "production" || approved.Production.AppSecret == "" {
		t.Fatalf("review %+v", approved)
	}
	c.expect(c.admin("POST", review, map[string]any{"decision": "approve"}), 409, "ALREADY_REVIEWED")
	c.expect(c.admin("POST", fmt.Sprintf("/admin/v1/apps/%d/review", approved.Production.AppID), map[string]any{"decision": "approve"}), 409, "ALREADY_REVIEWED")
	prod := &client{t: t, base: c.base, http: c.http, appID: approved.Production.AppID, appKey: approved.Production.AppKey, secret: approved.Production.AppSecret}
	prod.expect(prod.partner("GET", "/open/v1/webhooks/events", nil), 200, 0)
	sandbox.expect(sandbox.partner("GET", "/open/v1/webhooks/events", nil), 200, 0)
	rejected := c.newApp("rejected", "sandbox")
	c.expect(c.admin("POST", fmt.Sprintf("/admin/v1/apps/%d/review", rejected.appID), map[string]any{"decision": "reject", "notes": nil}), 200, 0)

	// Scopes.
	scopes := fmt.Sprintf("/admin/v1/apps/%d/scopes", sandbox.appID)
	c.expect(c.send("PUT", scopes, map[string]any{"scopes": []string{"orders"}}, nil), 401, "HTTP_401")
	c.expect(c.admin("PUT", scopes, ``), 400, "HTTP_400")
	c.expect(c.admin("PUT", scopes, tooLarge()), 413, "PAYLOAD_TOO_LARGE")
	c.expect(c.admin("PUT", scopes, map[string]any{"scopes": []string{"orders", "everything"}}), 422, "VALIDATION_ERROR")
	c.expect(c.admin("PUT", "/admin/v1/apps/999999/scopes", map[string]any{"scopes": []string{"orders"}}), 404, "APP_NOT_FOUND")
	// A token issued while the app had daily_report outlives the grant, and
	// is refused by the daily report once the scope is gone.
	tok := c.expectOAuth("/oauth/token", "grant_type=client_credentials", sandbox.appKey, sandbox.secret, 200, "")
	c.expect(c.admin("PUT", scopes, map[string]any{"scopes": []string{"orders", "orders"}}), 200, 0)
	sandbox.expect(sandbox.partner("GET", "/open/v1/order/detail?order_code=PO2024010199", nil), 404, "ORDER_NOT_FOUND")
	sandbox.expect(sandbox.partner("GET", "/open/v1/channel/users/0?channel_user_id=u-1", nil), 403, "SCOPE_NOT_GRANTED")
	sandbox.expect(sandbox.partner("GET", "/open/v1/webhooks/events", nil), 403, "SCOPE_NOT_GRANTED")
	sandbox.expect(sandbox.partner("POST", "/open/v1/benefit-cards/verify-use", map[string]any{}), 403, "SCOPE_NOT_GRANTED")
	sandbox.expect(sandbox.partner("POST", "/open/v1/service-providers", map[string]any{}), 403, "SCOPE_NOT_GRANTED")
	sandbox.expect(sandbox.signedH("GET", "/open/v1/health-reports/1", nil, freshNonce()), 403, "SCOPE_NOT_GRANTED")
	sandbox.expect(sandbox.signedH("POST", "/sandbox/mock/measure", map[string]any{"appKey": sandbox.appKey}, freshNonce()), 403, "SCOPE_NOT_GRANTED")
	c.expectOAuth("/oauth/token", "grant_type=client_credentials", sandbox.appKey, sandbox.secret, 400, "invalid_scope")
	sandbox.expect(sandbox.send("GET", "/v1/health/daily-report?open_user_id=1", nil, func(h http.Header, _ []byte) {
		h.Set("Authorization", "Bearer "+tok["access_token"].(string))
		h.Set("X-App-Key", sandbox.appKey)
	}), 403, "SCOPE_NOT_GRANTED")
	// No scopes declared: every scope again.
	c.expect(c.admin("PUT", scopes, map[string]any{}), 200, 0)
	sandbox.expect(sandbox.partner("GET", "/open/v1/webhooks/events", nil), 200, 0)
	c.expect(c.admin("PUT", scopes, map[string]any{"scopes": []string{}}), 200, 0)
}

// benefitTraffic drives benefit items, service providers (self and
// operator registration, review, allowed items), card issuance, card
// reads, verify-use with every refusal, fulfillment records and ratings.
// The benefit commands run on clock.
func benefitTraffic(t *testing.T, c *client, clock *offsetClock) {
	// Benefit items.
	const items = "/admin/v1/benefit-items"
	c.expect(c.send("POST", items, map[string]any{"name": "x"}, nil), 401, "HTTP_401")
	c.expect(c.admin("POST", items, `{`), 400, "HTTP_400")
	c.expect(c.admin("POST", items, tooLarge()), 413, "PAYLOAD_TOO_LARGE")
	c.expect(c.admin("POST", items, map[string]any{"name": strings.Repeat("n", 65)}), 422, "VALIDATION_ERROR")
	var checkup, dental struct {
		ID int64 `json:"benefit_item_id"`
	}
	c.expect(c.admin("POST", items, map[string]any{"name": "Annual check-up"}), 201, 0).data(t, &checkup)
	c.expect(c.admin("POST", items, map[string]any{"name": "Dental cleaning"}), 201, 0).data(t, &dental)
	c.expect(c.admin("GET", items, nil), 200, 0)
	c.expect(c.admin("POST", items+"/999999/suspend", nil), 404, "BENEFIT_ITEM_NOT_FOUND")
	c.expect(c.admin("POST", items+"/abc/activate", nil), 422, "VALIDATION_ERROR")
	c.expect(c.admin("POST", fmt.Sprintf("%s/%d/activate", items, checkup.ID), nil), 200, 0)

	// Service providers.
	station, insurer := c.newApp("station", "sandbox"), c.newApp("insurer", "sandbox")
	const own = "/open/v1/service-providers"
	c.expect(c.send("POST", own, map[string]any{}, nil), 401, "HTTP_401")
	station.expect(station.partner("POST", own, `x`), 400, "HTTP_400")
	station.expect(station.partner("POST", own, tooLarge()), 413, "PAYLOAD_TOO_LARGE")
	station.expect(station.partner("POST", own, map[string]any{"name": "Station 1", "type": "HEALTH_STATION", "contact": "010-1"}), 422, "VALIDATION_ERROR")
	var sp, cp struct {
		ID     int64  `json:"provider_id"`
		Status string `json:"status"`
	}
	station.expect(station.partner("POST", own, map[string]any{"name": "Station 1", "type": "HEALTH_STATION", "contact": "010-1", "points_code": "P-1"}), 201, 0).data(t, &sp)
	const providers = "/admin/v1/service-providers"
	c.expect(c.admin("POST", providers, map[string]any{"app_id": 999999, "name": "x", "type": "CHANNEL_PARTNER", "contact": "x"}), 404, "APP_NOT_FOUND")
	c.expect(c.admin("POST", providers, map[string]any{"app_id": insurer.appID, "name": "Insurer", "type": "CHANNEL_PARTNER", "contact": "x", "points_code": "P-9"}), 422, "VALIDATION_ERROR")
	c.expect(c.admin("POST", providers, map[string]any{"app_id": insurer.appID, "name": "Insurer", "type": "CHANNEL_PARTNER", "contact": "x"}), 201, 0).data(t, &cp)
	c.expect(c.admin("POST", providers, `[]`), 400, "HTTP_400")
	c.expect(c.admin("GET", providers, nil), 200, 0)
	c.expect(c.admin("GET", fmt.Sprintf("%s?app_id=%d", providers, station.appID), nil), 200, 0)
	c.expect(c.admin("GET", providers+"?app_id=x", nil), 422, "VALIDATION_ERROR")
	insurer.expect(insurer.partner("GET", "/open/v1/benefit-cards/fulfillments", nil), 200, 0) // the provider is in the read model
	insurer.expect(insurer.partner("POST", "/open/v1/benefit-cards/batch-issue", map[string]any{"cards": []any{}}), 403, "SERVICE_PROVIDER_UNAUTHORIZED")
	stationReview := fmt.Sprintf("%s/%d/review", providers, sp.ID)
	c.expect(c.admin("POST", stationReview, map[string]any{"decision": "later"}), 422, "VALIDATION_ERROR")
	c.expect(c.admin("POST", providers+"/999999/review", map[string]any{"decision": "approve"}), 404, "PROVIDER_NOT_FOUND")
	c.expect(c.admin("POST", stationReview, map[string]any{"decision": "approve", "notes": "visited"}), 200, 0)
	c.expect(c.admin("POST", stationReview, map[string]any{"decision": "reject"}), 409, "ALREADY_REVIEWED")
	c.expect(c.admin("POST", fmt.Sprintf("%s/%d/review", providers, cp.ID), map[string]any{"decision": "approve"}), 200, 0)
	stationItems := fmt.Sprintf("%s/%d/benefit-items", providers, sp.ID)
	c.expect(c.admin("PUT", stationItems, map[string]any{"allowed_benefit_item_ids": []int64{999999}}), 422, "VALIDATION_ERROR")
	c.expect(c.admin("PUT", fmt.Sprintf("%s/%d/benefit-items", providers, cp.ID), map[string]any{"allowed_benefit_item_ids": []int64{checkup.ID}}), 422, "VALIDATION_ERROR")
	c.expect(c.admin("PUT", providers+"/999999/benefit-items", map[string]any{}), 404, "PROVIDER_NOT_FOUND")
	c.expect(c.admin("PUT", stationItems, map[string]any{}), 200, 0)
	c.expect(c.admin("PUT", stationItems, map[string]any{"allowed_benefit_item_ids": []int64{checkup.ID, checkup.ID}}), 200, 0)

	// Issuance by the channel partner and by the operator.
	const batch = "/open/v1/benefit-cards/batch-issue"
	expires := clock.now().Add(48 * time.Hour).Format(time.RFC3339)
	card := func(number string, expires string, lines ...any) map[string]any {
		m := map[string]any{"holder_name": "韩梅梅", "holder_phone": "13987654321", "expires_at": expires, "items": lines}
		if number != "" {
			m["card_number"] = number
		}
		return m
	}
	line := func(item int64, qty int) map[string]any {
		return map[string]any{"benefit_item_id": item, "quantity": qty}
	}
	type issued struct {
		Cards []struct {
			CardNumber string `json:"card_number"`
			Items      []struct {
				UserBenefitItemID int64 `json:"user_benefit_item_id"`
			} `json:"items"`
		} `json:"cards"`
	}
	var cards issued
	insurer.expect(insurer.partner("POST", batch, map[string]any{"batch_id": "b-1", "cards": []any{
		card("", expires, line(checkup.ID, 3), line(dental.ID, 1)),
	}}), 201, 0).data(t, &cards)
	insurer.expect(insurer.partner("POST", batch, map[string]any{"batch_id": "b-1", "cards": []any{
		card("", expires, line(checkup.ID, 3), line(dental.ID, 1)),
	}}), 201, 0) // the same batch again: the same card
	// Partners do not choose numbers; operators may.
	insurer.expect(insurer.partner("POST", batch, map[string]any{"cards": []any{card("CARD00000000002", expires, line(checkup.ID, 2))}}), 422, "VALIDATION_ERROR")
	var chosen issued
	c.expect(c.admin("POST", "/admin/v1/benefit-cards", map[string]any{"issuer_app_id": insurer.appID, "cards": []any{
		card("CARD00000000002", expires, line(checkup.ID, 2)),
		// Without an offset expires_at is read in the platform zone.
		card("CARD00000000003", clock.now().Add(time.Hour).In(time.FixedZone("CST", 8*3600)).Format("2006-01-02 15:04:05"), line(checkup.ID, 2)),
	}}), 201, 0).data(t, &chosen)
	cards.Cards = append(cards.Cards, chosen.Cards...)
	insurer.expect(insurer.partner("POST", batch, map[string]any{"cards": []any{card("short", "2000-01-01", line(checkup.ID, 0))}}), 422, "VALIDATION_ERROR")
	insurer.expect(insurer.partner("POST", batch, map[string]any{"cards": []any{card("", expires, line(999999, 1))}}), 404, "BENEFIT_ITEM_NOT_FOUND")
	insurer.expect(insurer.partner("POST", batch, `{`), 400, "HTTP_400")
	insurer.expect(insurer.partner("POST", batch, tooLarge()), 413, "PAYLOAD_TOO_LARGE")
	c.expect(c.send("POST", batch, map[string]any{}, nil), 401, "HTTP_401")
	c.expect(c.admin("POST", fmt.Sprintf("%s/%d/suspend", items, dental.ID), nil), 200, 0)
	insurer.expect(insurer.partner("POST", batch, map[string]any{"cards": []any{card("", expires, line(dental.ID, 1))}}), 422, "BENEFIT_ITEM_INACTIVE")
	c.expect(c.admin("POST", fmt.Sprintf("%s/%d/activate", items, dental.ID), nil), 200, 0)
	const opCards = "/admin/v1/benefit-cards"
	c.expect(c.admin("POST", opCards, map[string]any{"issuer_app_id": 999999, "cards": []any{card("", expires, line(checkup.ID, 1))}}), 404, "APP_NOT_FOUND")
	c.expect(c.admin("POST", opCards, map[string]any{"issuer_app_id": insurer.appID}), 422, "VALIDATION_ERROR")
	c.expect(c.admin("POST", opCards, map[string]any{"issuer_app_id": insurer.appID, "cards": []any{card("CARD00000000002", expires, line(checkup.ID, 1))}}), 409, "CARD_NUMBER_EXISTS")
	var byOperator issued
	c.expect(c.admin("POST", opCards, map[string]any{"issuer_app_id": insurer.appID, "cards": []any{card("", expires, line(checkup.ID, 1))}}), 201, 0).data(t, &byOperator)
	c.expect(c.send("POST", opCards, map[string]any{}, nil), 401, "HTTP_401")

	// Card reads.
	number := cards.Cards[0].CardNumber
	c.expect(c.admin("GET", "/admin/v1/benefit-cards/"+number, nil), 200, 0)
	c.expect(c.admin("GET", "/admin/v1/benefit-cards/nope", nil), 404, "CARD_NOT_FOUND")
	insurer.expect(insurer.partner("GET", "/open/v1/benefit-cards/detail?card_number="+number, nil), 200, 0)
	insurer.expect(insurer.partner("GET", "/open/v1/benefit-cards/detail?card_number="+byOperator.Cards[0].CardNumber, nil), 200, 0)
	insurer.expect(insurer.partner("GET", "/open/v1/benefit-cards/detail", nil), 404, "CARD_NOT_FOUND")
	station.expect(station.partner("GET", "/open/v1/benefit-cards/detail?card_number="+number, nil), 404, "CARD_NOT_FOUND")

	// Verify-use, with every refusal.
	const verify = "/open/v1/benefit-cards/verify-use"
	use := map[string]any{"card_number": number, "benefit_item_id": checkup.ID, "points_code": "P-1", "remark": "front desk"}
	station.expect(station.partner("GET", "/open/v1/benefit-cards/fulfillments", nil), 200, 0) // the provider is in the read model
	c.expect(c.send("POST", verify, use, nil), 401, "HTTP_401")
	station.expect(station.partner("POST", verify, `[]`), 400, "HTTP_400")
	station.expect(station.partner("POST", verify, tooLarge()), 413, "PAYLOAD_TOO_LARGE")
	station.expect(station.partner("POST", verify, map[string]any{"card_number": "123", "user_benefit_item_id": 1, "benefit_item_id": 2, "quantity": 1001}), 422, "VALIDATION_ERROR")
	station.expect(station.partner("POST", verify, map[string]any{"card_number": number, "benefit_item_id": checkup.ID, "points_code": "P-2"}), 403, "SERVICE_PROVIDER_UNAUTHORIZED")
	insurer.expect(insurer.partner("POST", verify, use), 403, "SERVICE_PROVIDER_UNAUTHORIZED")
	station.expect(station.partner("POST", verify, map[string]any{"card_number": "000000000000000", "benefit_item_id": checkup.ID, "points_code": "P-1"}), 404, "CARD_NOT_FOUND")
	station.expect(station.partner("POST", verify, map[string]any{"card_number": number, "benefit_item_id": dental.ID, "points_code": "P-1"}), 403, "SERVICE_PROVIDER_UNAUTHORIZED")
	station.expect(station.partner("POST", verify, map[string]any{"card_number": "CARD00000000002", "benefit_item_id": checkup.ID, "points_code": "P-1", "quantity": 3}), 422, "NO_REMAINING_QUOTA")
	var v struct {
		RecordID  int64 `json:"fulfillment_record_id"`
		Remaining int64 `json:"remaining_quantity"`
	}
	station.expect(station.partner("POST", verify, use), 200, 0).data(t, &v)
	if v.Remaining != 2 {
		t.Fatalf("verified %+v", v)
	}
	station.expect(station.partner("POST", verify, use), 422, "DUPLICATE_FULFILLMENT")
	station.expect(station.partner("POST", verify, map[string]any{"card_number": "CARD00000000002", "user_benefit_item_id": cards.Cards[1].Items[0].UserBenefitItemID,
		"points_code": "P-1", "quantity": nil, "service_provider_id": sp.ID, "remark": nil}), 200, 0)
	c.expect(c.admin("POST", fmt.Sprintf("%s/%d/suspend", items, checkup.ID), nil), 200, 0)
	station.expect(station.partner("POST", verify, map[string]any{"card_number": "CARD00000000003", "benefit_item_id": checkup.ID, "points_code": "P-1"}), 422, "BENEFIT_ITEM_INACTIVE")
	c.expect(c.admin("POST", fmt.Sprintf("%s/%d/activate", items, checkup.ID), nil), 200, 0)
	clock.offset.Store(int64(2 * time.Hour))
	station.expect(station.partner("POST", verify, map[string]any{"card_number": "CARD00000000003", "benefit_item_id": checkup.ID, "points_code": "P-1"}), 422, "CARD_EXPIRED")
	clock.offset.Store(0)

	// Records and ratings.
	var list struct {
		Fulfillments []struct {
			RecordID int64 `json:"fulfillment_record_id"`
		} `json:"fulfillments"`
	}
	station.expect(station.partner("GET", "/open/v1/benefit-cards/fulfillments?limit=10", nil), 200, 0).data(t, &list)
	if len(list.Fulfillments) != 2 {
		t.Fatalf("provider records %+v", list)
	}
	station.expect(station.partner("GET", "/open/v1/benefit-cards/fulfillments?role=nobody", nil), 422, "VALIDATION_ERROR")
	c.expect(c.send("GET", "/open/v1/benefit-cards/fulfillments", nil, nil), 401, "HTTP_401")
	eventually(t, "the issuer's fulfillment records", func() bool {
		insurer.expect(insurer.partner("GET", "/open/v1/benefit-cards/fulfillments?role=issuer", nil), 200, 0).data(t, &list)
		return len(list.Fulfillments) == 2
	})
	rate := fmt.Sprintf("/open/v1/benefit-cards/fulfillments/%d/rating", v.RecordID)
	c.expect(c.send("POST", rate, map[string]any{"rating": 5}, nil), 401, "HTTP_401")
	insurer.expect(insurer.partner("POST", rate, ``), 400, "HTTP_400")
	insurer.expect(insurer.partner("POST", rate, tooLarge()), 413, "PAYLOAD_TOO_LARGE")
	insurer.expect(insurer.partner("POST", rate, map[string]any{"rating": 6}), 422, "VALIDATION_ERROR")
	insurer.expect(insurer.partner("POST", "/open/v1/benefit-cards/fulfillments/abc/rating", map[string]any{"rating": 5}), 422, "VALIDATION_ERROR")
	station.expect(station.partner("POST", rate, map[string]any{"rating": 1}), 404, "FULFILLMENT_NOT_FOUND")
	insurer.expect(insurer.partner("POST", rate, map[string]any{"rating": 5}), 200, 0)
	insurer.expect(insurer.partner("POST", rate, map[string]any{"rating": 4}), 409, "ALREADY_RATED")
	eventually(t, "the rating in the issuer's records", func() bool {
		var rated struct {
			Fulfillments []struct {
				Rating *int `json:"rating"`
			} `json:"fulfillments"`
		}
		insurer.expect(insurer.partner("GET", "/open/v1/benefit-cards/fulfillments?role=issuer", nil), 200, 0).data(t, &rated)
		return rated.Fulfillments[0].Rating != nil
	})
	insurer.expect(insurer.partner("GET", "/open/v1/benefit-cards/detail?card_number="+number, nil), 200, 0)
}
