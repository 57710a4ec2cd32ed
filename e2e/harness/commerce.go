package harness

import (
	"fmt"
	"sync/atomic"
	"testing"
)

func (p *Platform) AdminOK(method, path string, body any, status int) Response {
	p.T.Helper()
	res := p.Admin(method, path, body)
	if res.Status != status {
		p.T.Fatalf("%s %s: %d %s", method, path, res.Status, res.Raw)
	}
	return res
}

func OrderBody(third string, goods ...string) map[string]any {
	items := []any{}
	for i, g := range goods {
		items = append(items, map[string]any{"goods_code": g, "quantity": i + 1, "unit_price": 12345})
	}
	return map[string]any{"third_order_id": third, "contact_person": "李雷", "contact_phone": "13812345678", "address": "北京市朝阳区",
		"area_code": "110105", "items": items}
}

// BenefitSetup: an item, a health station app and a channel-partner app, both approved.
func BenefitSetup(t testing.TB, p *Platform) (station, partner *App, item int64) {
	t.Helper()
	var it struct {
		ID int64 `json:"benefit_item_id"`
	}
	p.AdminOK("POST", "/admin/v1/benefit-items", map[string]any{"name": "Annual check-up"}, 201).Data(t, &it)
	station, partner = p.CreateApp("station"), p.CreateApp("insurer")
	var sp, cp struct {
		ID int64 `json:"provider_id"`
	}
	station.Expect("POST", "/open/v1/service-providers", map[string]any{"name": "Station 1", "type": "HEALTH_STATION", "contact": "010-1", "points_code": "P-1"}, 201, "0").Data(t, &sp)
	p.AdminOK("POST", "/admin/v1/service-providers", map[string]any{"app_id": partner.ID, "name": "Insurer", "type": "CHANNEL_PARTNER", "contact": "x"}, 201).Data(t, &cp)
	// Not approved yet: no batch issuance, no verification.
	partner.Expect("POST", "/open/v1/benefit-cards/batch-issue", map[string]any{"cards": []any{}}, 403, "SERVICE_PROVIDER_UNAUTHORIZED")
	for _, id := range []int64{sp.ID, cp.ID} {
		p.AdminOK("POST", fmt.Sprintf("/admin/v1/service-providers/%d/review", id), map[string]any{"decision": "approve"}, 200)
	}
	p.AdminOK("PUT", fmt.Sprintf("/admin/v1/service-providers/%d/benefit-items", sp.ID), map[string]any{"allowed_benefit_item_ids": []int64{it.ID}}, 200)
	if res := p.Admin("PUT", fmt.Sprintf("/admin/v1/service-providers/%d/benefit-items", cp.ID), map[string]any{"allowed_benefit_item_ids": []int64{it.ID}}); res.Status != 422 {
		t.Fatalf("items for a channel partner: %d", res.Status)
	}
	return station, partner, it.ID
}

// batchSeq numbers the test batches.
var batchSeq atomic.Int64

func (a *App) Issue(item, qty int64, expires string) string {
	a.P.T.Helper()
	var out struct {
		Cards []struct {
			CardNumber string `json:"card_number"`
		} `json:"cards"`
	}
	// A batch is identified by its content: a fresh batch_id per call keeps
	// identical calls from being one batch.
	a.Expect("POST", "/open/v1/benefit-cards/batch-issue", map[string]any{"batch_id": fmt.Sprintf("t-%d", batchSeq.Add(1)), "cards": []any{map[string]any{
		"holder_name": "韩梅梅", "holder_phone": "13987654321", "expires_at": expires, "items": []any{map[string]any{"benefit_item_id": item, "quantity": qty}},
	}}}, 201, "0").Data(a.P.T, &out)
	return out.Cards[0].CardNumber
}
