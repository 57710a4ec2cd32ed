package erasure_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// TestEraseChannelUser erases a user: their personal fields read as null in
// the log from then on, the users read model drops them (404 USER_NOT_FOUND
// for the partner), the channel_user_id registers again as a new person, and
// a full rebuild after the erasure gives the same read models.
func TestEraseChannelUser(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		p := harness.Start(t, cfg)
		a := p.CreateApp("partner")
		body := harness.RegisterBody("u-erase")
		body["user"].(map[string]any)["name"] = "赵六"
		body["family_members"].([]any)[0].(map[string]any)["id_number"] = "11010519491231002X"
		var gone, kept harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", body, http.StatusCreated, "0").Data(t, &gone)
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-keep"), http.StatusCreated, "0").Data(t, &kept)
		goneUser := fmt.Sprintf("/open/v1/channel/users/%d", gone.OpenUserID)
		res := p.Ingest(p.Uploader("station"), "POST", "/admin/v1/health-reports", harness.ReportBody(gone.OpenUserID, ""))
		if res.Status != http.StatusCreated {
			t.Fatalf("ingest: %d %s", res.Status, res.Raw)
		}
		var report struct {
			ID int64 `json:"id"`
		}
		res.Data(t, &report)
		erase := fmt.Sprintf("/admin/v1/channel-users/%d/erase", gone.OpenUserID)

		res = p.Admin("POST", erase, map[string]any{"reason": "PIPL request ticket 42"})
		if res.Status != http.StatusOK {
			t.Fatalf("erase: %d %s", res.Status, res.Raw)
		}
		a.Expect("GET", goneUser, nil, http.StatusNotFound, "USER_NOT_FOUND")
		// The report stays (ids, type, times) with its personal fields null.
		pulled := a.Pull(report.ID)
		var rep map[string]json.RawMessage
		pulled.Data(t, &rep)
		var meta map[string]json.RawMessage
		_ = json.Unmarshal(rep["meta"], &meta)
		for name, v := range map[string]json.RawMessage{"raw_data": rep["raw_data"], "file_path": rep["file_path"],
			"interpretation_result": rep["interpretation_result"], "interpretation_detail": rep["interpretation_detail"], "operator_name": meta["operator_name"]} {
			if string(v) != "null" {
				t.Errorf("erased report's %s = %s", name, v)
			}
		}
		if string(rep["report_type"]) != `"BLOOD_PRESSURE"` {
			t.Errorf("erased report lost its type: %s", pulled.Raw)
		}
		a.Expect("PATCH", goneUser, map[string]any{"nickname": "x"}, http.StatusNotFound, "USER_NOT_FOUND")
		before := p.EventCount()
		if res := p.Admin("POST", erase, map[string]any{"reason": "again"}); res.Status != http.StatusNotFound || res.Code() != "USER_NOT_FOUND" {
			t.Fatalf("second erase: %d %s", res.Status, res.Raw)
		}
		if n := p.EventCount(); n != before {
			t.Fatalf("a refused erase appended %d events", n-before)
		}
		// Even the decrypting store has nothing of theirs any more.
		shown := harness.Dump(t, p.Node.Events)
		for _, v := range []string{"11010519491231002X", "赵六"} {
			if strings.Contains(shown, v) {
				t.Errorf("after erasure the log still shows %q", v)
			}
		}
		if !strings.Contains(shown, `"reason":"PIPL request ticket 42"`) {
			t.Fatal("no user.erased event with the reason")
		}
		// Nor the partner's id of them: not in a field (user.erased and
		// channel_user.unbound included), not in a stream name.
		if strings.Contains(shown, "u-erase") {
			t.Error("after erasure the log still shows the channel_user_id")
		}
		stored, err := p.Node.StoredEvents.ReadAll(t.Context(), events.Position{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range stored {
			if strings.Contains(rec.Stream, "u-erase") || strings.Contains(rec.Stream, "u-keep") {
				t.Errorf("stream %s is named after a channel_user_id", rec.Stream)
			}
		}
		// Admin pages show a live user's channel_user_id neither.
		if res := p.Admin("GET", "/admin/v1/events?limit=10000", nil); res.Status != http.StatusOK || strings.Contains(string(res.Raw), "u-keep") {
			t.Errorf("admin events page: %d, shows the channel_user_id: %v", res.Status, strings.Contains(string(res.Raw), "u-keep"))
		}

		// The partner's channel_user_id is free: a new person, a new id.
		var again harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-erase"), http.StatusCreated, "0").Data(t, &again)
		if again.OpenUserID == gone.OpenUserID || !again.Created {
			t.Fatalf("re-register: %+v", again)
		}
		keptUser := fmt.Sprintf("/open/v1/channel/users/%d", kept.OpenUserID)
		againUser := fmt.Sprintf("/open/v1/channel/users/%d", again.OpenUserID)
		want := []string{fmt.Sprintf("%+v", harness.Deref(a.Snapshot(keptUser))), fmt.Sprintf("%+v", harness.Deref(a.Snapshot(againUser))), string(a.Pull(report.ID).Env.Data)}

		if res := p.Admin("POST", "/admin/v1/projections/read_models/rebuild", nil); res.Status != http.StatusAccepted {
			t.Fatalf("rebuild: %d %s", res.Status, res.Raw)
		}
		if err := p.Node.WaitCaughtUp(t.Context()); err != nil {
			t.Fatal(err)
		}
		got := []string{fmt.Sprintf("%+v", harness.Deref(a.Snapshot(keptUser))), fmt.Sprintf("%+v", harness.Deref(a.Snapshot(againUser))), string(a.Pull(report.ID).Env.Data)}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("after rebuild\n got %v\nwant %v", got, want)
		}
		a.Expect("GET", goneUser, nil, http.StatusNotFound, "USER_NOT_FOUND")
	})
}

// TestErasureStopsTheUsersDeliveries: a webhook about a user is failing and
// due again; after the user's erasure no further attempt is made, the
// partner's delivery log and feed show no payload for it, and a rebuild of
// the deliveries read model gives the same answers.
func TestErasureStopsTheUsersDeliveries(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		cfg.WebhookAllowLoopback = true
		cfg.WebhookSchedule = []time.Duration{300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}
		p := harness.Start(t, cfg)
		a := p.CreateApp("partner")
		rcv := harness.NewReceiver(t)
		rcv.Secret = a.WebhookSecret
		rcv.Script(500, 500, 500, 500, 500, 500)
		p.ConfigureWebhook(a, rcv.Srv.URL, "user.profile.updated")
		var reg harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-hooked"), http.StatusCreated, "0").Data(t, &reg)
		a.Expect("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID), map[string]any{"nickname": "小六"}, http.StatusOK, "0")
		first := rcv.WaitFor(1)
		if len(first) != 1 || first[0].Event != "user.profile.updated" {
			t.Fatalf("first attempt %+v", first)
		}

		if res := p.Admin("POST", fmt.Sprintf("/admin/v1/channel-users/%d/erase", reg.OpenUserID), map[string]any{"reason": "request 7"}); res.Status != http.StatusOK {
			t.Fatalf("erase: %d %s", res.Status, res.Raw)
		}
		// The retries were due every 300 ms: none of them may go out now.
		rcv.Quiet(len(rcv.WaitFor(1)), 1500*time.Millisecond)

		logOf := func() (string, string) {
			deliveries := a.Expect("GET", "/open/v1/webhooks/deliveries", nil, http.StatusOK, "0")
			feed := a.Expect("GET", "/open/v1/webhooks/events", nil, http.StatusOK, "0")
			return string(deliveries.Env.Data), string(feed.Env.Data)
		}
		log1, feed1 := logOf()
		for _, shown := range []string{log1, feed1} {
			if strings.Contains(shown, "小六") || strings.Contains(shown, "nickname") {
				t.Fatalf("an erased user's delivery still shows its payload: %s", shown)
			}
		}
		if !strings.Contains(log1, `"status":"abandoned"`) {
			t.Fatalf("the erased user's failing delivery is not abandoned: %s", log1)
		}

		if res := p.Admin("POST", "/admin/v1/projections/deliveries/rebuild", nil); res.Status != http.StatusAccepted {
			t.Fatalf("rebuild: %d %s", res.Status, res.Raw)
		}
		if err := p.Node.WaitCaughtUp(t.Context()); err != nil {
			t.Fatal(err)
		}
		if log2, feed2 := logOf(); log2 != log1 || feed2 != feed1 {
			t.Fatalf("the deliveries family differs after a rebuild:\nlog  %s\n     %s\nfeed %s\n     %s", log1, log2, feed1, feed2)
		}
	})
}

// TestResendOfAnErasedDelivery: a delivery about a user who was erased
// cannot be resent, by the partner or an operator (410 DELIVERY_ERASED,
// nothing appended), and a resend of every matching delivery skips it and
// does not count it, while another user's delivery is resent and sent.
func TestResendOfAnErasedDelivery(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		cfg.WebhookAllowLoopback = true
		p := harness.Start(t, cfg)
		a := p.CreateApp("partner")
		other := p.CreateApp("other")
		rcv := harness.NewReceiver(t)
		rcv.Secret = a.WebhookSecret
		p.ConfigureWebhook(a, rcv.Srv.URL, "user.profile.updated")
		var gone, kept harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-gone"), http.StatusCreated, "0").Data(t, &gone)
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-kept"), http.StatusCreated, "0").Data(t, &kept)
		a.Expect("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", gone.OpenUserID), map[string]any{"nickname": "小六"}, http.StatusOK, "0")
		a.Expect("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", kept.OpenUserID), map[string]any{"nickname": "小七"}, http.StatusOK, "0")
		sent := rcv.WaitFor(2)
		ids := map[int64]string{}
		for _, w := range sent {
			var body harness.UserWebhook
			if err := json.Unmarshal(w.Body, &body); err != nil {
				t.Fatal(err)
			}
			ids[body.OpenUserID] = body.DeliveryID
		}
		goneID, keptID := ids[gone.OpenUserID], ids[kept.OpenUserID]
		p.WaitDelivery(goneID, "delivered")
		p.WaitDelivery(keptID, "delivered")

		if res := p.Admin("POST", fmt.Sprintf("/admin/v1/channel-users/%d/erase", gone.OpenUserID), map[string]any{"reason": "ticket 9"}); res.Status != http.StatusOK {
			t.Fatalf("erase: %d %s", res.Status, res.Raw)
		}
		before := p.EventCount()
		a.Expect("POST", "/open/v1/webhooks/deliveries/"+goneID+"/resend", nil, http.StatusGone, "DELIVERY_ERASED")
		harness.ExpectCode(t, "admin resend", p.Admin("POST", "/admin/v1/deliveries/"+goneID+"/resend", nil), http.StatusGone, "DELIVERY_ERASED")
		// Another app learns nothing about the erased delivery.
		other.Expect("POST", "/open/v1/webhooks/deliveries/"+goneID+"/resend", nil, http.StatusNotFound, "DELIVERY_NOT_FOUND")
		if n := p.EventCount(); n != before {
			t.Fatalf("refused resends appended %d events", n-before)
		}

		var queued struct {
			Queued int `json:"queued"`
		}
		res := p.Admin("POST", fmt.Sprintf("/admin/v1/apps/%d/deliveries/resend?event=user.profile.updated", a.ID), nil)
		harness.ExpectCode(t, "resend matching", res, http.StatusAccepted, "0")
		res.Data(t, &queued)
		if queued.Queued != 1 {
			t.Fatalf("resend matching queued %d, want 1 (the erased user's delivery is skipped)", queued.Queued)
		}
		again := rcv.WaitFor(3)
		rcv.Quiet(3, 500*time.Millisecond)
		var body harness.UserWebhook
		_ = json.Unmarshal(again[2].Body, &body)
		if body.DeliveryID != keptID {
			t.Fatalf("resent %s, want the kept user's %s", body.DeliveryID, keptID)
		}
		if v := p.WaitDelivery(goneID, "delivered"); v.Attempts != 1 {
			t.Fatalf("the erased delivery was attempted again: %+v", v)
		}
	})
}

// TestIdempotentReplayAfterErasure: answers about a user are sealed with
// the user's data key, so after the user's erasure a replayed request gets
// 404 USER_NOT_FOUND (Idempotent-Replayed: true), never the answer with
// their data, and appends nothing; an answer about no user still replays
// byte for byte, and the key stays bound to its request.
func TestIdempotentReplayAfterErasure(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		p := harness.Start(t, cfg)
		a := p.CreateApp("partner")
		p.AdminOK("POST", "/admin/v1/goods", map[string]any{"goods_code": "BP-100", "goods_name": "Blood pressure monitor"}, 201)
		now := time.Now()
		body := harness.RegisterBody("u-idem")
		reg := a.Keyed("POST", "/open/v1/channel/users", body, "k-register", now)
		harness.ExpectCode(t, "register", reg, http.StatusCreated, "0")
		var created harness.RegisterData
		reg.Data(t, &created)
		user := fmt.Sprintf("/open/v1/channel/users/%d", created.OpenUserID)
		patch := a.Keyed("PATCH", user, map[string]any{"nickname": "小六"}, "k-patch", now)
		harness.ExpectCode(t, "patch", patch, http.StatusOK, "0")
		order := a.Keyed("POST", "/open/v1/order/create", harness.OrderBody("T-idem", "BP-100"), "k-order", now)
		harness.ExpectCode(t, "order", order, http.StatusCreated, "0")
		harness.SameAnswer(t, "register before erasure", reg, a.Keyed("POST", "/open/v1/channel/users", body, "k-register", now))

		stored := harness.Dump(t, p.Node.StoredEvents)
		if !strings.Contains(stored, fmt.Sprintf(`"sealed_body":"dk1:user-%d~`, created.OpenUserID)) {
			t.Fatal("the register's answer is not sealed with the user's data key")
		}

		if res := p.Admin("POST", fmt.Sprintf("/admin/v1/channel-users/%d/erase", created.OpenUserID), map[string]any{"reason": "ticket 11"}); res.Status != http.StatusOK {
			t.Fatalf("erase: %d %s", res.Status, res.Raw)
		}
		before := p.EventCount()
		for _, res := range []harness.Response{
			a.Keyed("POST", "/open/v1/channel/users", body, "k-register", now),
			a.Keyed("PATCH", user, map[string]any{"nickname": "小六"}, "k-patch", now),
		} {
			harness.ExpectCode(t, "replay after erasure", res, http.StatusNotFound, "USER_NOT_FOUND")
			if res.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("a replay after erasure is not marked replayed: %v", res.Header)
			}
			if strings.Contains(string(res.Raw), "u-idem") || strings.Contains(string(res.Raw), "open_user_id") {
				t.Fatalf("a replay after erasure shows the erased answer: %s", res.Raw)
			}
		}
		if n := p.EventCount(); n != before {
			t.Fatalf("replays after erasure appended %d events", n-before)
		}
		harness.SameAnswer(t, "order after erasure", order, a.Keyed("POST", "/open/v1/order/create", harness.OrderBody("T-idem", "BP-100"), "k-order", now))
		other := harness.RegisterBody("u-idem")
		other["user"].(map[string]any)["nickname"] = "x"
		harness.ExpectCode(t, "key reused", a.Keyed("POST", "/open/v1/channel/users", other, "k-register", now), 422, "IDEMPOTENCY_KEY_REUSED")
		var again harness.RegisterData
		a.Keyed("POST", "/open/v1/channel/users", body, "k-register-2", now).Data(t, &again)
		if again.OpenUserID == created.OpenUserID || !again.Created {
			t.Fatalf("register with a new key after erasure: %+v", again)
		}
	})
}

// TestErasureBlanksTheUsersOrders: an order placed for a channel user has
// its receiver fields sealed with the user's key, so erasing the user
// blanks them in the order (the order itself, its items and status stay),
// also after a rebuild; an order of no user keeps them.
func TestErasureBlanksTheUsersOrders(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		p := harness.Start(t, cfg)
		a := p.CreateApp("buyer")
		p.AdminOK("POST", "/admin/v1/goods", map[string]any{"goods_code": "BP-100", "goods_name": "Blood pressure monitor"}, 201)
		var reg harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-buyer"), http.StatusCreated, "0").Data(t, &reg)
		body := harness.OrderBody("T-user", "BP-100")
		body["user_id"] = reg.OpenUserID
		var mine, anon struct {
			OrderCode string `json:"order_code"`
		}
		a.Expect("POST", "/open/v1/order/create", body, 201, "0").Data(t, &mine)
		a.Expect("POST", "/open/v1/order/create", harness.OrderBody("T-anon", "BP-100"), 201, "0").Data(t, &anon)
		_, auditor := p.Operator("Aud", "auditor")
		reveal := func(code string) string {
			res := p.As(auditor, "GET", "/admin/v1/orders/"+code+"?reveal=true&reason=check", nil)
			harness.ExpectCode(t, "reveal", res, 200, "0")
			return string(res.Env.Data)
		}
		if got := reveal(mine.OrderCode); !strings.Contains(got, "李雷") {
			t.Fatalf("before erasure: %s", got)
		}
		if res := p.Admin("POST", fmt.Sprintf("/admin/v1/channel-users/%d/erase", reg.OpenUserID), map[string]any{"reason": "ticket 12"}); res.Status != http.StatusOK {
			t.Fatalf("erase: %d %s", res.Status, res.Raw)
		}
		if err := p.Node.WaitCaughtUp(t.Context()); err != nil {
			t.Fatal(err)
		}
		erased := reveal(mine.OrderCode)
		for _, v := range []string{"李雷", "13812345678", "北京市朝阳区"} {
			if strings.Contains(erased, v) {
				t.Fatalf("the erased user's order still shows %q: %s", v, erased)
			}
		}
		if !strings.Contains(erased, `"contact_person":""`) || !strings.Contains(erased, `"area_text":null`) || !strings.Contains(erased, `"order_status":"PENDING_REVIEW"`) {
			t.Fatalf("erased order: %s", erased)
		}
		kept := reveal(anon.OrderCode)
		if !strings.Contains(kept, "李雷") {
			t.Fatalf("an order of no user lost its receiver: %s", kept)
		}
		if res := p.Admin("POST", "/admin/v1/projections/orders/rebuild", nil); res.Status != http.StatusAccepted {
			t.Fatalf("rebuild: %d %s", res.Status, res.Raw)
		}
		if err := p.Node.WaitCaughtUp(t.Context()); err != nil {
			t.Fatal(err)
		}
		if again := reveal(mine.OrderCode); again != erased {
			t.Fatalf("after rebuild\n got %s\nwant %s", again, erased)
		}
		if again := reveal(anon.OrderCode); again != kept {
			t.Fatalf("after rebuild\n got %s\nwant %s", again, kept)
		}
	})
}
