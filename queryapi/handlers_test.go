package queryapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/projections"
)

func (h *harness) seedUser() {
	nick := "annie"
	h.users.users = append(h.users.users, projections.User{AppID: h.appA.AppID, OpenUserID: 11, ChannelUserID: "cu-1", Name: "Ann", Nickname: &nick, Status: "ACTIVE", RegisteredAt: testNow})
	h.users.groups[11] = []projections.Group{{FamilyGroupID: 3, AppGroupID: 7, Name: "home", MemberCount: 1}}
	h.users.members[11] = []projections.Member{{MemberID: 5, AppUserID: "m-1", AppGroupID: 7, FamilyGroupID: 3, Name: "Bo", Relationship: "SON", UpdatedAt: testNow}}
}

func TestSnapshotRead(t *testing.T) {
	h := newHarness(t)
	h.seedUser()
	r := h.get("/open/v1/channel/users/11", as(h.appA))
	expect(t, "snapshot", r, http.StatusOK, "0")
	d := r.Data(t)
	u := d["user"].(map[string]any)
	if u["open_user_id"] != float64(11) || u["channel_user_id"] != "cu-1" || u["nickname"] != "annie" {
		t.Fatalf("snapshot user: %s", r.Raw)
	}
	if g := d["family_groups"].([]any); len(g) != 1 {
		t.Fatalf("family_groups: %s", r.Raw)
	}
	if m := d["family_members"].([]any); len(m) != 1 || m[0].(map[string]any)["app_user_id"] != "m-1" {
		t.Fatalf("family_members: %s", r.Raw)
	}
	byChannel := h.get("/open/v1/channel/users/0?channel_user_id=cu-1", schemeH(h.appA, "n-1"))
	expect(t, "snapshot by channel_user_id, scheme H", byChannel, http.StatusOK, "0")
	later := h.get("/open/v1/channel/users/11?updated_after="+testNow.Add(time.Hour).Format(time.RFC3339), as(h.appA))
	expect(t, "snapshot updated_after", later, http.StatusOK, "0")
	if m := later.Data(t)["family_members"].([]any); len(m) != 0 {
		t.Fatalf("updated_after kept older members: %s", later.Raw)
	}
	h.reads(t, []readCase{
		// Another app's user is not found, exactly as a missing id.
		{"another app's user", "/open/v1/channel/users/11", as(h.appB), http.StatusNotFound, "USER_NOT_FOUND"},
		{"missing user", "/open/v1/channel/users/12", as(h.appA), http.StatusNotFound, "USER_NOT_FOUND"},
		{"another app's channel_user_id", "/open/v1/channel/users/0?channel_user_id=cu-1", as(h.appB), http.StatusNotFound, "USER_NOT_FOUND"},
		{"id and channel_user_id of two users", "/open/v1/channel/users/12?channel_user_id=cu-1", as(h.appA), http.StatusNotFound, "USER_NOT_FOUND"},
		{"bad id", "/open/v1/channel/users/abc", as(h.appA), http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
		{"bad updated_after", "/open/v1/channel/users/11?updated_after=yesterday", as(h.appA), http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
		{"unsigned", "/open/v1/channel/users/11", nil, http.StatusUnauthorized, "HTTP_401"},
		{"scheme H nonce replayed", "/open/v1/channel/users/0?channel_user_id=cu-1", schemeH(h.appA, "n-1"), http.StatusUnauthorized, "HTTP_401"},
		{"wrong secret", "/open/v1/channel/users/11", func(r *http.Request, b []byte) {
			bad := h.appA
			bad.AppSecret = "nope"
			as(bad)(r, b)
		}, http.StatusUnauthorized, "HTTP_401"},
	})
}

// A read after the app's own write waits for the read model to apply it: while
// the read model is behind, the read answers 503 with Retry-After once the
// bounded wait is over; once the read model catches up, the read answers.
func TestReadYourWritesWaitsForTheFamily(t *testing.T) {
	h := newHarness(t)
	h.seedUser()
	h.orders.orders = []projections.Order{{OrderID: 1, OrderCode: "O-1", AppID: h.appA.AppID, ThirdOrderID: "T-1", OrderTime: testNow, Status: "PENDING"}}
	pos := h.appendEvent("goods-1", catalog.GoodsCreated{GoodsID: 1, GoodsCode: "G-1", GoodsName: "Scale"})
	h.marks.Wrote(h.appA.AppID, pos)

	// The runners are not started: every read model is behind the write.
	// The two reads wait out ReadTimeout side by side.
	t.Run("behind", func(t *testing.T) {
		for _, c := range []struct{ name, path string }{
			{"snapshot", "/open/v1/channel/users/11"},
			{"order detail", "/open/v1/order/detail?order_code=O-1"},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				r := h.get(c.path, as(h.appA))
				expect(t, c.name+" behind", r, http.StatusServiceUnavailable, "HTTP_503")
				if r.Header.Get("Retry-After") != "1" {
					t.Fatalf("Retry-After %q, want 1", r.Header.Get("Retry-After"))
				}
			})
		}
	})
	// Another app wrote nothing: its reads do not wait.
	expect(t, "another app's read", h.get("/open/v1/order/detail?order_code=O-1", as(h.appB)), http.StatusNotFound, "ORDER_NOT_FOUND")

	h.start()
	expect(t, "snapshot caught up", h.get("/open/v1/channel/users/11", as(h.appA)), http.StatusOK, "0")
	expect(t, "order caught up", h.get("/open/v1/order/detail?order_code=O-1", as(h.appA)), http.StatusOK, "0")
	if got := h.readModels[projections.ReadModelUsers].Position(); got.Less(pos) {
		t.Fatalf("users family at %v, before the write at %v", got, pos)
	}
}

func TestOrderDetail(t *testing.T) {
	h := newHarness(t)
	h.orders.orders = []projections.Order{{OrderID: 1, OrderCode: "O-1", AppID: h.appA.AppID, ThirdOrderID: "T-1", ContactPhone: "13800138000",
		OrderTime: testNow, CreatedAt: testNow, UpdatedAt: testNow, Status: "PENDING",
		Items: []projections.OrderItem{{ItemID: 4, GoodsCode: "G-1", Quantity: 2, UnitPrice: 500, TotalPrice: 1000}}}}
	r := h.get("/open/v1/order/detail?order_code=O-1", as(h.appA))
	expect(t, "order detail", r, http.StatusOK, "0")
	d := r.Data(t)
	if d["order_code"] != "O-1" || d["third_order_id"] != "T-1" || d["order_time"] != testNow.Format(DateTime) || d["shipped_at"] != nil {
		t.Fatalf("order data: %s", r.Raw)
	}
	if it := d["items"].([]any); len(it) != 1 || it[0].(map[string]any)["device_sns"] == nil {
		t.Fatalf("items (device_sns must be [] not null): %s", r.Raw)
	}
	h.reads(t, []readCase{
		{"another app's order", "/open/v1/order/detail?order_code=O-1", as(h.appB), http.StatusNotFound, "ORDER_NOT_FOUND"},
		{"missing order", "/open/v1/order/detail?order_code=O-2", as(h.appA), http.StatusNotFound, "ORDER_NOT_FOUND"},
		{"no order_code", "/open/v1/order/detail", as(h.appA), http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
		{"unsigned", "/open/v1/order/detail?order_code=O-1", nil, http.StatusUnauthorized, "HTTP_401"},
		{"admin order without token", "/admin/v1/orders/O-1", nil, http.StatusUnauthorized, "HTTP_401"},
		{"admin missing order", "/admin/v1/orders/O-2", asAdmin, http.StatusNotFound, "ORDER_NOT_FOUND"},
	})
	// An operator sees any app's order, its receiver's phone redacted
	// unless revealed with a reason, which is an audit fact.
	adm := h.get("/admin/v1/orders/O-1", asAdmin)
	expect(t, "admin order", adm, http.StatusOK, "0")
	if adm.Data(t)["contact_phone"] == "13800138000" {
		t.Fatalf("operator saw the phone unrevealed: %s", adm.Raw)
	}
	if len(h.auditor.facts) != 0 {
		t.Fatalf("an unrevealed read was audited: %v", h.auditor.facts)
	}
}

func TestAdminReads(t *testing.T) {
	h := newHarness(t)
	h.appendEvent("goods-1", catalog.GoodsCreated{GoodsID: 1, GoodsCode: "G-1", GoodsName: "Scale"})
	apps := h.get("/admin/v1/apps", asAdmin)
	expect(t, "list apps", apps, http.StatusOK, "0")
	if list, ok := apps.Data(t)["apps"].([]any); !ok || len(list) != 0 {
		t.Fatalf("apps of an empty directory: %s", apps.Raw)
	}
	ev := h.get("/admin/v1/events?limit=10", asAdmin)
	expect(t, "events", ev, http.StatusOK, "0")
	if list := ev.Data(t)["events"].([]any); len(list) != 1 || list[0].(map[string]any)["type"] == "" {
		t.Fatalf("events page: %s", ev.Raw)
	}
	hist := h.get("/admin/v1/history?stream=goods-1", asAdmin)
	expect(t, "history", hist, http.StatusOK, "0")
	if hist.Data(t)["stream"] != "goods-1" || hist.Data(t)["revealed"] != false {
		t.Fatalf("history: %s", hist.Raw)
	}
	pr := h.get("/admin/v1/projections", asAdmin)
	expect(t, "projections", pr, http.StatusOK, "0")
	if list := pr.Data(t)["projections"].([]any); len(list) != len(h.readModels) {
		t.Fatalf("projections: %s", pr.Raw)
	}
	h.reads(t, []readCase{
		{"unknown app", "/admin/v1/apps/777", asAdmin, http.StatusNotFound, "APP_NOT_FOUND"},
		{"bad app id", "/admin/v1/apps/x", asAdmin, http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
		{"no token", "/admin/v1/apps", nil, http.StatusUnauthorized, "HTTP_401"},
		{"partner signature", "/admin/v1/apps", as(h.appA), http.StatusUnauthorized, "HTTP_401"},
		{"history without stream", "/admin/v1/history", asAdmin, http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
		{"events limit too large", "/admin/v1/events?limit=10001", asAdmin, http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
		// Only a named auditor reveals personal fields; the bootstrap token does not.
		{"reveal by the bootstrap token", "/admin/v1/history?stream=goods-1&reveal=true", asAdmin, http.StatusForbidden, "ROLE_FORBIDDEN"},
	})
}

func TestReportPull(t *testing.T) {
	h := newHarness(t)
	h.rep.reports = []projections.Report{{ReportID: 21, AppID: h.appA.AppID, OpenUserID: 11}}
	r := h.get("/open/v1/health-reports/21", schemeH(h.appA, "p-1"))
	if r.Status != http.StatusOK {
		t.Fatalf("pull: %d %s", r.Status, r.Raw)
	}
	if r.Header.Get("X-RateLimit-Limit") != "60" || r.Header.Get("X-RateLimit-Remaining") == "" {
		t.Fatalf("rate-limit headers: %v", r.Header)
	}
	if len(h.views.viewed) != 1 || h.views.viewed[0] != 21 {
		t.Fatalf("first pull marked viewed %v, want [21]", h.views.viewed)
	}
	if len(h.auditor.facts) != 1 || h.auditor.facts[0].ReportID != 21 || h.auditor.facts[0].AppID != h.appA.AppID {
		t.Fatalf("audit facts %+v", h.auditor.facts)
	}
	h.reads(t, []readCase{
		// Another app's report is the spec's 404 without a code, exactly as a missing one.
		{"another app's report", "/open/v1/health-reports/21", schemeH(h.appB, "p-2"), http.StatusNotFound, ""},
		{"missing report", "/open/v1/health-reports/22", schemeH(h.appA, "p-3"), http.StatusNotFound, ""},
		{"bad id", "/open/v1/health-reports/x", schemeH(h.appA, "p-4"), http.StatusNotFound, ""},
		{"scheme M is not accepted", "/open/v1/health-reports/21", as(h.appA), http.StatusUnauthorized, "MISSING_APP_KEY"},
		{"nonce replayed", "/open/v1/health-reports/21", schemeH(h.appA, "p-1"), http.StatusUnauthorized, "INVALID_SIGNATURE"},
	})
	h.limiter.allowed = 0
	lim := h.get("/open/v1/health-reports/21", schemeH(h.appA, "p-9"))
	if lim.Status != http.StatusTooManyRequests || lim.Header.Get("Retry-After") != "2" || lim.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("over the limit: %d Retry-After %q %s", lim.Status, lim.Header.Get("Retry-After"), lim.Raw)
	}
	if n := len(h.auditor.facts); n != 1 {
		t.Fatalf("refused pulls were audited: %d facts", n)
	}
}
