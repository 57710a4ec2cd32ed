package commerce_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

type orderDetail struct {
	OrderCode       string  `json:"order_code"`
	OrderStatus     string  `json:"order_status"`
	OrderSource     string  `json:"order_source"`
	CooperationType string  `json:"cooperation_type"`
	LogisticsType   string  `json:"logistics_type"`
	PostagePolicy   string  `json:"postage_policy"`
	AreaText        *string `json:"area_text"`
	Items           []struct {
		ID             int64    `json:"id"`
		GoodsCode      string   `json:"goods_code"`
		GoodsName      string   `json:"goods_name"`
		Quantity       int64    `json:"quantity"`
		UnitPrice      int64    `json:"unit_price"`
		TotalPrice     int64    `json:"total_price"`
		ShippingStatus string   `json:"shipping_status"`
		DeviceSNs      []string `json:"device_sns"`
	} `json:"items"`
}

func TestOrdersEndToEnd(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		cfg.WebhookAllowLoopback = true
		p := harness.Start(t, cfg)
		a := p.CreateApp("buyer")
		rcv := harness.NewReceiver(t)
		rcv.Secret = a.WebhookSecret
		p.ConfigureWebhook(a, rcv.Srv.URL, "order.*")
		p.AdminOK("POST", "/admin/v1/goods", map[string]any{"goods_code": "BP-100", "goods_name": "Blood pressure monitor"}, 201)
		p.AdminOK("POST", "/admin/v1/goods", map[string]any{"goods_code": "RING-1", "goods_name": "SpO2 ring"}, 201)
		if res := p.Admin("POST", "/admin/v1/goods", map[string]any{"goods_code": "BP-100", "goods_name": "again"}); res.Status != 409 || res.Code() != "GOODS_CODE_EXISTS" {
			t.Fatalf("duplicate goods: %d %s", res.Status, res.Raw)
		}

		var created struct {
			ID        int64  `json:"id"`
			OrderCode string `json:"order_code"`
			OrderTime string `json:"order_time"`
		}
		a.Expect("POST", "/open/v1/order/create", harness.OrderBody("T-1", "BP-100", "RING-1"), 201, "0").Data(t, &created)
		if !strings.HasPrefix(created.OrderCode, "PO") || created.ID <= 0 {
			t.Fatalf("created %+v", created)
		}
		if _, err := time.Parse("2006-01-02 15:04:05", created.OrderTime); err != nil {
			t.Fatalf("order_time %q", created.OrderTime)
		}
		var d orderDetail
		a.Expect("GET", "/open/v1/order/detail?order_code="+created.OrderCode, nil, 200, "0").Data(t, &d)
		if d.OrderStatus != "PENDING_REVIEW" || d.OrderSource != "API_INTERFACE" || d.CooperationType != "PURCHASE" || d.LogisticsType != "EXPRESS_DELIVERY" ||
			d.PostagePolicy != "FREE_SHIPPING" || len(d.Items) != 2 || d.Items[1].TotalPrice != 2*12345 || d.Items[0].GoodsName != "Blood pressure monitor" ||
			d.Items[0].ShippingStatus != "PENDING_SHIPMENT" || d.AreaText != nil {
			t.Fatalf("detail %+v", d)
		}

		// A repeated third_order_id: same body → the same order; different → conflict.
		var again struct {
			ID      int64 `json:"id"`
			Created bool  `json:"created"`
		}
		a.Expect("POST", "/open/v1/order/create", harness.OrderBody("T-1", "BP-100", "RING-1"), 200, "0").Data(t, &again)
		if again.ID != created.ID || again.Created {
			t.Fatalf("repeat %+v", again)
		}
		a.Expect("POST", "/open/v1/order/create", harness.OrderBody("T-1", "BP-100"), 409, "DUPLICATE_THIRD_ORDER_ID")
		// Withdrawing goods later does not turn the repeat into an error.
		p.AdminOK("POST", "/admin/v1/goods/RING-1/deactivate", nil, 200)
		a.Expect("POST", "/open/v1/order/create", harness.OrderBody("T-1", "BP-100", "RING-1"), 200, "0")
		a.Expect("POST", "/open/v1/order/create", harness.OrderBody("T-5", "RING-1"), 404, "GOODS_NOT_FOUND")
		p.AdminOK("POST", "/admin/v1/goods/RING-1/activate", nil, 200)
		a.Expect("POST", "/open/v1/order/create", harness.OrderBody("T-2", "NOPE"), 404, "GOODS_NOT_FOUND")
		bad := harness.OrderBody("T-3", "BP-100")
		bad["contact_phone"], bad["logistics_type"], bad["items"] = "12345", "PIGEON", []any{map[string]any{"goods_code": "BP-100", "quantity": 0, "unit_price": -1}}
		res := a.Expect("POST", "/open/v1/order/create", bad, 422, "VALIDATION_ERROR")
		for _, f := range []string{"contact_phone", "logistics_type", "items[0].quantity", "items[0].unit_price"} {
			if res.Env.Errors[f] == nil {
				t.Fatalf("no error on %s: %v", f, res.Env.Errors)
			}
		}
		noItems := harness.OrderBody("T-4")
		a.Expect("POST", "/open/v1/order/create", noItems, 422, "VALIDATION_ERROR")

		other := p.CreateApp("other")
		other.Expect("GET", "/open/v1/order/detail?order_code="+created.OrderCode, nil, 404, "ORDER_NOT_FOUND")

		// The state machine, with refused transitions.
		ship := map[string]any{"logistics_company": "SF", "tracking_number": "SF100", "items": []any{map[string]any{"item_id": d.Items[0].ID, "device_sns": []string{"SN-A"}}}}
		if res := p.Admin("POST", "/admin/v1/orders/"+created.OrderCode+"/ship", ship); res.Status != 409 || res.Code() != "ILLEGAL_TRANSITION" {
			t.Fatalf("ship before approval: %d %s", res.Status, res.Raw)
		}
		p.AdminOK("POST", "/admin/v1/orders/"+created.OrderCode+"/approve", map[string]any{"reason": "stock confirmed"}, 200)
		if res := p.Admin("POST", "/admin/v1/orders/"+created.OrderCode+"/reject", map[string]any{"reason": "late"}); res.Status != 409 {
			t.Fatalf("reject after approval: %d", res.Status)
		}
		tooMany := map[string]any{"logistics_company": "SF", "tracking_number": "SF1", "items": []any{map[string]any{"item_id": d.Items[0].ID, "device_sns": []string{"a", "b"}}}}
		if res := p.Admin("POST", "/admin/v1/orders/"+created.OrderCode+"/ship", tooMany); res.Status != 422 || res.Code() != "SHIPMENT_MISMATCH" {
			t.Fatalf("two serials for quantity 1: %d %s", res.Status, res.Raw)
		}
		p.AdminOK("POST", "/admin/v1/orders/"+created.OrderCode+"/ship", ship, 200)
		a.Expect("GET", "/open/v1/order/detail?order_code="+created.OrderCode, nil, 200, "0").Data(t, &d)
		var raw map[string]json.RawMessage
		a.Expect("GET", "/open/v1/order/detail?order_code="+created.OrderCode, nil, 200, "0").Data(t, &raw)
		if string(raw["reject_reason"]) != "null" {
			t.Fatalf("an approval's reason became a reject reason: %s", raw["reject_reason"])
		}
		if d.OrderStatus != "PARTIALLY_SHIPPED" || d.Items[0].ShippingStatus != "SHIPPED" || d.Items[0].DeviceSNs[0] != "SN-A" || d.Items[1].ShippingStatus != "PENDING_SHIPMENT" {
			t.Fatalf("after partial shipment %+v", d)
		}
		// The rest through the internal callback, with its own credential.
		cb := map[string]any{"order_code": created.OrderCode, "logistics_company": "SF", "tracking_number": "SF101",
			"items": []any{map[string]any{"item_id": d.Items[1].ID, "device_sns": []string{"R1", "R2"}}}}
		req, _ := http.NewRequest("POST", p.Srv.URL+"/open/internal/order/shipped-callback", bytes.NewReader(harness.Encode(t, cb)))
		req.Header.Set("Authorization", "Bearer "+p.Node.AdminToken)
		if res := p.Send(req); res.Status != 401 {
			t.Fatalf("internal callback with the admin token: %d", res.Status)
		}
		req, _ = http.NewRequest("POST", p.Srv.URL+"/open/internal/order/shipped-callback", bytes.NewReader(harness.Encode(t, cb)))
		req.Header.Set("Authorization", "Bearer "+p.Node.InternalToken)
		if res := p.Send(req); res.Status != 200 {
			t.Fatalf("internal callback: %d %s", res.Status, res.Raw)
		}
		a.Expect("GET", "/open/v1/order/detail?order_code="+created.OrderCode, nil, 200, "0").Data(t, &d)
		if d.OrderStatus != "SHIPPED" {
			t.Fatalf("after full shipment %+v", d)
		}
		if res := p.Admin("POST", "/admin/v1/orders/"+created.OrderCode+"/ship", ship); res.Status != 409 {
			t.Fatalf("ship a shipped order: %d", res.Status)
		}

		// Two shipment webhooks, signed, with logistics and serial numbers.
		hooks := rcv.WaitFor(2)
		var body struct {
			Event          string `json:"event"`
			OrderCode      string `json:"order_code"`
			ThirdOrderID   string `json:"third_order_id"`
			TrackingNumber string `json:"tracking_number"`
			Complete       bool   `json:"complete"`
			Items          []struct {
				DeviceSNs []string `json:"device_sns"`
			} `json:"items"`
		}
		// The spec does not order webhooks: find the second shipment's.
		later := hooks[1]
		if strings.Contains(string(hooks[0].Body), `"tracking_number":"SF101"`) {
			later = hooks[0]
		}
		_ = json.Unmarshal(later.Body, &body)
		if !later.Verified || body.Event != "order.shipped" || body.OrderCode != created.OrderCode || body.ThirdOrderID != "T-1" || !body.Complete ||
			body.TrackingNumber != "SF101" || len(body.Items) != 1 || len(body.Items[0].DeviceSNs) != 2 {
			t.Fatalf("shipment webhook %s", later.Body)
		}

		// The sandbox test route ships the caller's own order; production apps may not use it.
		var second struct {
			OrderCode string `json:"order_code"`
		}
		a.Expect("POST", "/open/v1/order/create", harness.OrderBody("T-9", "RING-1"), 201, "0").Data(t, &second)
		a.Expect("POST", "/open/v1/order/shipped-callback-test", map[string]any{"order_code": second.OrderCode}, 200, "0")
		other.Expect("POST", "/open/v1/order/shipped-callback-test", map[string]any{"order_code": second.OrderCode}, 404, "ORDER_NOT_FOUND")
		if w := rcv.WaitFor(3)[2]; !strings.Contains(string(w.Body), second.OrderCode) {
			t.Fatalf("sandbox shipment webhook %s", w.Body)
		}
	})
}

func TestOnboardingReviewAndScopes(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir()})
	a := p.CreateApp("partner")
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), 201, "0")
	var rev struct {
		Production harness.App `json:"production"`
	}
	p.AdminOK("POST", fmt.Sprintf("/admin/v1/apps/%d/review", a.ID), map[string]any{"decision": "approve", "notes": "docs checked"}, 200).Data(t, &rev)
	prod := rev.Production
	prod.P = p
	if prod.ID == a.ID || prod.Key == a.Key || prod.Secret == "" {
		t.Fatalf("production credentials %+v", prod)
	}
	if res := p.Admin("POST", fmt.Sprintf("/admin/v1/apps/%d/review", a.ID), map[string]any{"decision": "approve"}); res.Status != 409 {
		t.Fatalf("second review: %d", res.Status)
	}
	// Production is a separate tenant: the sandbox user is not there.
	prod.Expect("GET", "/open/v1/channel/users/0?channel_user_id=u-1", nil, 404, "USER_NOT_FOUND")
	prod.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), 201, "0")
	// Sandbox-only routes refuse the production app.
	body := harness.Encode(t, map[string]any{"appKey": prod.Key, "thirdUserId": "t", "deviceKey": "HOME_SPO2_RING", "measureMode": "SPO2"})
	if res := p.Send(prod.RequestH("POST", "/sandbox/mock/measure", body, harness.FreshNonce(), time.Now())); res.Status != 403 || res.Code() != "SANDBOX_ONLY" {
		t.Fatalf("production mock: %d %s", res.Status, res.Raw)
	}
	if res := p.Admin("POST", fmt.Sprintf("/admin/v1/apps/%d/review", prod.ID), map[string]any{"decision": "approve"}); res.Status != 409 {
		t.Fatalf("review of a production app: %d", res.Status)
	}

	// Least privilege: an app that declares only orders cannot touch users.
	p.AdminOK("PUT", fmt.Sprintf("/admin/v1/apps/%d/scopes", prod.ID), map[string]any{"scopes": []string{"orders"}}, 200)
	prod.Expect("GET", "/open/v1/channel/users/0?channel_user_id=u-1", nil, 403, "SCOPE_NOT_GRANTED")
	prod.Expect("GET", "/open/v1/order/detail?order_code=PO2026010199", nil, 404, "ORDER_NOT_FOUND")
	if res := p.Admin("PUT", fmt.Sprintf("/admin/v1/apps/%d/scopes", prod.ID), map[string]any{"scopes": []string{"everything"}}); res.Status != 422 {
		t.Fatalf("unknown scope: %d", res.Status)
	}
}

func TestBenefitVerificationEndToEnd(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		now := time.Now()
		var mu sync.Mutex
		cfg.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		p := harness.Start(t, cfg)
		station, partner, item := harness.BenefitSetup(t, p)
		card := partner.Issue(item, 3, now.Add(48*time.Hour).Format(time.RFC3339))
		if len(card) != 15 {
			t.Fatalf("card number %q", card)
		}
		verify := map[string]any{"card_number": card, "benefit_item_id": item, "points_code": "P-1", "remark": "front desk"}
		var v struct {
			RecordID  int64  `json:"fulfillment_record_id"`
			Masked    string `json:"card_number_masked"`
			ItemName  string `json:"benefit_item_name"`
			Used      int64  `json:"quantity_used"`
			Remaining int64  `json:"remaining_quantity"`
			User      struct {
				Name  string `json:"name_masked"`
				Phone string `json:"phone_masked"`
			} `json:"user_info"`
			VerifiedAt string `json:"verified_at"`
		}
		station.Expect("POST", "/open/v1/benefit-cards/verify-use", verify, 200, "0").Data(t, &v)
		if v.Used != 1 || v.Remaining != 2 || v.Masked != card[:4]+"*******"+card[11:] || v.ItemName != "Annual check-up" || v.User.Name != "韩**" || v.User.Phone != "139****4321" {
			t.Fatalf("verified %+v", v)
		}
		if _, err := time.Parse("2006-01-02 15:04:05", v.VerifiedAt); err != nil {
			t.Fatalf("verified_at %q", v.VerifiedAt)
		}
		// Every error of the spec.
		station.Expect("POST", "/open/v1/benefit-cards/verify-use", verify, 422, "DUPLICATE_FULFILLMENT")
		station.Expect("POST", "/open/v1/benefit-cards/verify-use", map[string]any{"card_number": card, "benefit_item_id": item, "points_code": "P-1", "quantity": 0}, 422, "VALIDATION_ERROR")
		wrongStation := map[string]any{"card_number": card, "benefit_item_id": item, "points_code": "P-2"}
		station.Expect("POST", "/open/v1/benefit-cards/verify-use", wrongStation, 403, "SERVICE_PROVIDER_UNAUTHORIZED")
		partner.Expect("POST", "/open/v1/benefit-cards/verify-use", verify, 403, "SERVICE_PROVIDER_UNAUTHORIZED")
		station.Expect("POST", "/open/v1/benefit-cards/verify-use", map[string]any{"card_number": "000000000000000", "benefit_item_id": item, "points_code": "P-1"}, 404, "CARD_NOT_FOUND")
		res := station.Expect("POST", "/open/v1/benefit-cards/verify-use", map[string]any{"card_number": "123", "user_benefit_item_id": 1, "benefit_item_id": 2, "remark": strings.Repeat("x", 201)}, 422, "VALIDATION_ERROR")
		for _, f := range []string{"card_number", "user_benefit_item_id", "remark"} {
			if res.Env.Errors[f] == nil {
				t.Fatalf("no error on %s: %v", f, res.Env.Errors)
			}
		}
		mu.Lock()
		now = now.Add(time.Minute) // past the cooldown
		mu.Unlock()
		station.Expect("POST", "/open/v1/benefit-cards/verify-use", map[string]any{"card_number": card, "benefit_item_id": item, "points_code": "P-1", "quantity": 5}, 422, "NO_REMAINING_QUOTA")
		p.AdminOK("POST", fmt.Sprintf("/admin/v1/benefit-items/%d/suspend", item), nil, 200)
		station.Expect("POST", "/open/v1/benefit-cards/verify-use", verify, 422, "BENEFIT_ITEM_INACTIVE")
		p.AdminOK("POST", fmt.Sprintf("/admin/v1/benefit-items/%d/activate", item), nil, 200)
		station.Expect("POST", "/open/v1/benefit-cards/verify-use", verify, 200, "0")
		mu.Lock()
		now = now.Add(72 * time.Hour)
		later := now
		mu.Unlock()
		// Signed at the node's (advanced) time, so only the card's expiry refuses it.
		if res := p.Send(station.Request("POST", "/open/v1/benefit-cards/verify-use", verify, later)); res.Status != 422 || res.Code() != "CARD_EXPIRED" {
			t.Fatalf("expired card: %d %s", res.Status, res.Raw)
		}

		mu.Lock()
		now = time.Now()
		mu.Unlock()
		// Records: the provider lists its own, the issuer rates them once.
		var list struct {
			Fulfillments []struct {
				RecordID int64  `json:"fulfillment_record_id"`
				Card     string `json:"card_number"`
				Qty      int64  `json:"current_usage_quantity"`
				Status   string `json:"status"`
				Points   string `json:"points_code"`
				Rating   *int   `json:"rating"`
			} `json:"fulfillments"`
		}
		station.Expect("GET", "/open/v1/benefit-cards/fulfillments", nil, 200, "0").Data(t, &list)
		if len(list.Fulfillments) != 2 || list.Fulfillments[0].Status != "COMPLETED" || list.Fulfillments[0].Points != "P-1" || strings.Contains(list.Fulfillments[0].Card, card[5:10]) {
			t.Fatalf("records %+v", list)
		}
		partner.Expect("POST", fmt.Sprintf("/open/v1/benefit-cards/fulfillments/%d/rating", v.RecordID), map[string]any{"rating": 5}, 200, "0")
		partner.Expect("POST", fmt.Sprintf("/open/v1/benefit-cards/fulfillments/%d/rating", v.RecordID), map[string]any{"rating": 4}, 409, "ALREADY_RATED")
		station.Expect("POST", fmt.Sprintf("/open/v1/benefit-cards/fulfillments/%d/rating", v.RecordID), map[string]any{"rating": 1}, 404, "FULFILLMENT_NOT_FOUND")
		partner.Expect("POST", fmt.Sprintf("/open/v1/benefit-cards/fulfillments/%d/rating", v.RecordID+1), map[string]any{"rating": 6}, 422, "VALIDATION_ERROR")
		partner.Expect("GET", "/open/v1/benefit-cards/fulfillments?role=issuer", nil, 200, "0").Data(t, &list)
		if len(list.Fulfillments) != 2 || list.Fulfillments[0].Rating == nil || *list.Fulfillments[0].Rating != 5 {
			t.Fatalf("issuer records %+v", list)
		}
		var cd struct {
			Items []struct {
				Remaining int64 `json:"remaining_quantity"`
			} `json:"items"`
		}
		partner.Expect("GET", "/open/v1/benefit-cards/detail?card_number="+card, nil, 200, "0").Data(t, &cd)
		if cd.Items[0].Remaining != 1 {
			t.Fatalf("card %+v", cd)
		}
		station.Expect("GET", "/open/v1/benefit-cards/detail?card_number="+card, nil, 404, "CARD_NOT_FOUND")
	})
}

func TestConcurrentVerifyUseOverHTTP(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir(), VerifyCooldown: -1})
	station, partner, item := harness.BenefitSetup(t, p)
	card := partner.Issue(item, 10, time.Now().Add(time.Hour).Format(time.RFC3339))
	var ok, quota atomic.Int64
	var wg sync.WaitGroup
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := station.Do("POST", "/open/v1/benefit-cards/verify-use", map[string]any{"card_number": card, "benefit_item_id": item, "points_code": "P-1"})
			switch {
			case res.Status == 200:
				ok.Add(1)
			case res.Code() == "NO_REMAINING_QUOTA":
				quota.Add(1)
			default:
				t.Errorf("verify: %d %s", res.Status, res.Raw)
			}
		}()
	}
	wg.Wait()
	var cd struct {
		Items []struct {
			Remaining int64 `json:"remaining_quantity"`
		} `json:"items"`
	}
	partner.Expect("GET", "/open/v1/benefit-cards/detail?card_number="+card, nil, 200, "0").Data(t, &cd)
	if ok.Load() != 10 || quota.Load() != 190 || cd.Items[0].Remaining != 0 {
		t.Fatalf("%d verified, %d refused, remaining %d", ok.Load(), quota.Load(), cd.Items[0].Remaining)
	}
}
