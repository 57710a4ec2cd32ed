package privacy_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// The admin order and card reads show receiver and holder fields redacted;
// only an auditor who gives a reason sees them, and each such reveal is an
// audit fact naming the order (and its user) or the card, as the admin
// event reads do. The partner's own reads are unchanged.
func TestAdminOrderAndCardReveal(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		p := harness.Start(t, cfg)
		a := p.CreateApp("buyer")
		p.AdminOK("POST", "/admin/v1/goods", map[string]any{"goods_code": "BP-100", "goods_name": "Blood pressure monitor"}, 201)
		var order struct {
			ID        int64  `json:"id"`
			OrderCode string `json:"order_code"`
		}
		a.Expect("POST", "/open/v1/order/create", harness.OrderBody("T-1", "BP-100"), 201, "0").Data(t, &order)
		_, partner, item := harness.BenefitSetup(t, p)
		var issued struct {
			Cards []struct {
				CardNumber string `json:"card_number"`
			} `json:"cards"`
		}
		card := map[string]any{"holder_name": "韩梅梅", "holder_phone": "13912345678", "expires_at": time.Now().Add(48 * time.Hour).Format(time.RFC3339),
			"items": []any{map[string]any{"benefit_item_id": item, "quantity": 3}}}
		partner.Expect("POST", "/open/v1/benefit-cards/batch-issue", map[string]any{"batch_id": "b-1", "cards": []any{card}}, 201, "0").Data(t, &issued)
		number := issued.Cards[0].CardNumber

		orderPath, listPath, cardPath := "/admin/v1/orders/"+order.OrderCode, "/admin/v1/orders?app_id="+fmt.Sprint(a.ID), "/admin/v1/benefit-cards/"+number
		orderPII := []string{"李雷", "13812345678", "北京市朝阳区"}
		cardPII := []string{"韩梅梅", "13912345678"}
		for path, pii := range map[string][]string{orderPath: orderPII, listPath: orderPII, cardPath: cardPII} {
			res := p.Admin("GET", path, nil)
			harness.ExpectCode(t, path, res, 200, "0")
			for _, v := range pii {
				if strings.Contains(string(res.Raw), v) {
					t.Fatalf("%s shows %q without a reveal: %s", path, v, res.Raw)
				}
			}
			if !strings.Contains(string(res.Raw), `"[redacted]"`) {
				t.Fatalf("%s: no redacted field: %s", path, res.Raw)
			}
		}
		// The partner still sees its own order and card in clear.
		if res := a.Expect("GET", "/open/v1/order/detail?order_code="+order.OrderCode, nil, 200, "0"); !strings.Contains(string(res.Raw), "李雷") {
			t.Fatalf("partner order detail: %s", res.Raw)
		}

		auditorID, auditorTok := p.Operator("Aud", "auditor")
		_, supportTok := p.Operator("Sup", "support")
		before := p.EventCount()
		for _, path := range []string{orderPath, listPath, cardPath} {
			sep := "?"
			if strings.Contains(path, "?") {
				sep = "&"
			}
			harness.ExpectCode(t, "admin reveals "+path, p.Admin("GET", path+sep+"reveal=true&reason=curious", nil), 403, "ROLE_FORBIDDEN")
			harness.ExpectCode(t, "support reveals "+path, p.As(supportTok, "GET", path+sep+"reveal=true&reason=x", nil), 403, "ROLE_FORBIDDEN")
			harness.ExpectCode(t, "reveal without reason "+path, p.As(auditorTok, "GET", path+sep+"reveal=true", nil), 422, "VALIDATION_ERROR")
			harness.ExpectCode(t, "reveal=maybe "+path, p.As(auditorTok, "GET", path+sep+"reveal=maybe&reason=x", nil), 422, "VALIDATION_ERROR")
		}
		if n := p.EventCount(); n != before {
			t.Fatalf("refused reveals appended %d events", n-before)
		}

		for _, c := range []struct {
			path string
			pii  []string
		}{{orderPath, orderPII}, {cardPath, cardPII}} {
			path, pii := c.path, c.pii
			res := p.As(auditorTok, "GET", path+"?reveal=true", nil, "X-Audit-Reason", "DPO request 9")
			harness.ExpectCode(t, "reveal "+path, res, 200, "0")
			for _, v := range pii {
				if !strings.Contains(string(res.Raw), v) {
					t.Fatalf("the reveal of %s does not show %q: %s", path, v, res.Raw)
				}
			}
		}
		res := p.As(auditorTok, "GET", listPath+"&reveal=true&reason=list+check", nil)
		harness.ExpectCode(t, "reveal list", res, 200, "0")
		if !strings.Contains(string(res.Raw), "李雷") {
			t.Fatalf("the list reveal: %s", res.Raw)
		}

		var page struct {
			Facts []struct {
				Action   string   `json:"action"`
				Subjects []string `json:"subjects"`
				Reason   string   `json:"reason"`
			} `json:"facts"`
		}
		p.As(auditorTok, "GET", "/admin/v1/audit?actor="+url.QueryEscape(fmt.Sprintf("operator:%d", auditorID)), nil).Data(t, &page)
		got := fmt.Sprintf("%+v", page.Facts)
		want := fmt.Sprintf("[{Action:reveal.orders Subjects:[order-%d] Reason:DPO request 9} {Action:reveal.card Subjects:[card-%s] Reason:DPO request 9} {Action:reveal.orders Subjects:[order-%d] Reason:list check}]", order.ID, number, order.ID)
		if got != want {
			t.Fatalf("audit facts\n got %s\nwant %s", got, want)
		}
	})
}
