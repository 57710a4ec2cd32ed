package privacy_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/internal/measureplugin"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// Recognisable personal values: none may appear in a log line, nor in an
// error body (a validation error names the field, never the rejected value).
const (
	piiName     = "Zhangsan-PII-7f3a"
	piiNick     = "Nick-PII-7f3a"
	piiPhone    = "13912345678"
	piiIDNumber = "11010519491231002X"
	piiEmail    = "pii-7f3a@example.com"
	piiAddress  = "PII-Street-7f3a"
	piiBirth    = "1949-12-31"
	piiRaw      = "RAWPII7f3a"
	piiAvatar   = "https://img.example.com/PII-avatar-7f3a.png"
	piiHolder   = "Holder-PII-7f3a"
	piiInterp   = "Interp-PII-7f3a"
	piiCJK      = "张七三隐私"
)

var piiValues = []string{piiName, piiNick, piiPhone, piiIDNumber, piiEmail, piiAddress, piiBirth, piiRaw, piiAvatar, piiHolder, piiInterp, piiCJK,
	// fragments that survive truncation or quoting of a longer value
	"PII-7f3a", "7f3a@example", "PII-Street", "1949-12", "RAWPII", "张七三"}

// findPII returns the personal values text contains.
func findPII(text string) []string {
	var out []string
	for _, v := range piiValues {
		if strings.Contains(text, v) {
			out = append(out, v)
		}
	}
	return out
}

// piiDriver drives routes with personal values and remembers every error
// body it saw.
type piiDriver struct {
	t    *testing.T
	p    *harness.Platform
	errs []string // "what: body" of every answer with status >= 400
}

func (d *piiDriver) note(what string, res harness.Response) harness.Response {
	if res.Status >= 400 {
		d.errs = append(d.errs, fmt.Sprintf("%s -> %d %s", what, res.Status, res.Raw))
	}
	return res
}

// refused requires a 4xx answer.
func (d *piiDriver) refused(what string, res harness.Response) {
	d.t.Helper()
	d.note(what, res)
	if res.Status < 400 || res.Status >= 500 {
		d.t.Fatalf("%s: want a refusal, got %d %s", what, res.Status, res.Raw)
	}
}

// answered requires an answer that is not a server error.
func (d *piiDriver) answered(what string, res harness.Response) {
	d.t.Helper()
	d.note(what, res)
	if res.Status >= 500 {
		d.t.Fatalf("%s: %d %s", what, res.Status, res.Raw)
	}
}

func (d *piiDriver) ok(what string, res harness.Response) harness.Response {
	d.t.Helper()
	d.note(what, res)
	if res.Status >= 300 {
		d.t.Fatalf("%s: %d %s", what, res.Status, res.Raw)
	}
	return res
}

func TestLogsCarryNoPersonalData(t *testing.T) {
	t.Parallel()
	handlers := []struct {
		name     string
		handler  func(io.Writer) slog.Handler
		postgres bool
	}{
		{"json-memory", func(w io.Writer) slog.Handler {
			return slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug, AddSource: true})
		}, false},
		{"text-postgres", func(w io.Writer) slog.Handler {
			return slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})
		}, true},
	}
	for _, h := range handlers {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			logs := &harness.SyncBuffer{}
			cfg := node.Config{DataDir: t.TempDir(), Logger: slog.New(h.handler(logs)), WebhookAllowLoopback: true,
				WebhookSchedule: []time.Duration{5 * time.Millisecond, 5 * time.Millisecond}, VerifyCooldown: -1,
				// Every delivery here fails on purpose until it gives up; the
				// endpoint's breaker would hold the last ones for its cool-down.
				WebhookBreakerFailures: 1000}
			if h.postgres {
				cfg.PostgresURL = harness.NodeDB(t)
			}
			p := harness.Start(t, cfg)
			d := &piiDriver{t: t, p: p}
			sink := drivePersonalRoutes(d)
			if err := p.Node.WaitCaughtUp(t.Context()); err != nil {
				t.Fatal(err)
			}
			waitForFailedWebhooks(t, p, logs, sink)
			if !strings.Contains(logs.String(), `request`) || !strings.Contains(logs.String(), "webhook attempt failed") {
				t.Fatalf("the log captured no access lines or no webhook failures:\n%s", logs.String())
			}
			for _, line := range strings.Split(logs.String(), "\n") {
				if found := findPII(line); found != nil {
					t.Errorf("log line carries personal data %q:\n%s", found, line)
				}
			}
			for _, e := range d.errs {
				if found := findPII(e); found != nil {
					t.Errorf("error body carries personal data %q:\n%s", found, e)
				}
			}
		})
	}
}

// failingSink is a webhook receiver that always fails and echoes what it got,
// so a dispatcher that logged a response body would log the payload.
type failingSink struct {
	srv  *httptest.Server
	hits chan struct{}
}

func newFailingSink(t *testing.T) *failingSink {
	s := &failingSink{hits: make(chan struct{}, 10000)}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write(body)
		s.hits <- struct{}{}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// waitForFailedWebhooks waits until every delivery made so far has given up
// (abandoned or dead-lettered), so each failed attempt has been logged.
func waitForFailedWebhooks(t *testing.T, p *harness.Platform, logs *harness.SyncBuffer, sink *failingSink) {
	t.Helper()
	deadline := time.Now().Add(harness.WaitBound)
	var last harness.DeliveryView
	for time.Now().Before(deadline) {
		var list struct {
			Deliveries []harness.DeliveryView `json:"deliveries"`
		}
		res := p.Admin("GET", "/admin/v1/deliveries?limit=200", nil)
		if res.Status != http.StatusOK {
			t.Fatalf("deliveries: %d %s", res.Status, res.Raw)
		}
		res.Data(t, &list)
		done := len(list.Deliveries) > 0
		for _, v := range list.Deliveries {
			if v.Status != "dead_letter" && v.Status != "abandoned" {
				done = false
				last = v
			}
		}
		if done && len(sink.hits) > 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("deliveries never all gave up; still %+v; %d bytes of log", last, len(logs.String()))
}

// drivePersonalRoutes sends personal values through every route that takes
// them, well-formed and malformed.
func drivePersonalRoutes(d *piiDriver) *failingSink {
	t, p := d.t, d.p
	a := p.CreateApp("pii host")
	sink := newFailingSink(t)
	p.ConfigureWebhook(a, sink.srv.URL)

	// Channel users: register with groups and members, including id_number.
	member := func(appUserID string) map[string]any {
		return map[string]any{"app_user_id": appUserID, "app_group_id": 10, "name": piiName, "relationship": "SELF", "height": 175, "weight": 7000,
			"id_type": "ID_CARD", "id_number": piiIDNumber, "birth_date": piiBirth, "phone": piiPhone, "is_default": true}
	}
	user := map[string]any{"name": piiName, "nickname": piiNick, "phone": piiPhone, "gender": "male", "birth_date": piiBirth, "email": piiEmail, "avatar": piiAvatar}
	reg := map[string]any{"channel_user_id": "pii-u1", "user": user,
		"family_groups":  []any{map[string]any{"app_group_id": 10, "name": piiName + " family"}},
		"family_members": []any{member("self")}}
	var rd harness.RegisterData
	d.ok("register", a.Do("POST", "/open/v1/channel/users", reg)).Data(t, &rd)
	d.ok("register again", a.Do("POST", "/open/v1/channel/users", reg))
	userPath := fmt.Sprintf("/open/v1/channel/users/%d", rd.OpenUserID)

	// Malformed registrations carrying the values.
	long := strings.Repeat(piiName, 200)
	for what, body := range map[string]any{
		"bad phone":            map[string]any{"channel_user_id": "pii-u2", "user": map[string]any{"name": piiName, "phone": piiPhone + "X" + piiName}},
		"bad email":            map[string]any{"channel_user_id": "pii-u2", "user": map[string]any{"name": piiName, "email": "not-an-email " + piiEmail + " " + piiAddress}},
		"bad birth date":       map[string]any{"channel_user_id": "pii-u2", "user": map[string]any{"name": piiName, "birth_date": piiBirth + "T" + piiName}},
		"future birth date":    map[string]any{"channel_user_id": "pii-u2", "user": map[string]any{"name": piiName, "birth_date": "2999-12-31"}},
		"phone as number":      map[string]any{"channel_user_id": "pii-u2", "user": map[string]any{"name": piiName, "phone": 13912345678}},
		"name as object":       map[string]any{"channel_user_id": "pii-u2", "user": map[string]any{"name": map[string]any{"first": piiName}}},
		"over-long name":       map[string]any{"channel_user_id": "pii-u2", "user": map[string]any{"name": long, "nickname": long, "avatar": piiAvatar + long}},
		"bad id number":        map[string]any{"channel_user_id": "pii-u2", "user": map[string]any{"name": piiName}, "family_groups": []any{map[string]any{"app_group_id": 10, "name": "g"}}, "family_members": []any{map[string]any{"app_user_id": "x", "app_group_id": 10, "name": piiName, "relationship": "SELF", "id_type": "ID_CARD", "id_number": piiIDNumber + piiName}}},
		"bad id type":          map[string]any{"channel_user_id": "pii-u2", "user": map[string]any{"name": piiName}, "family_groups": []any{map[string]any{"app_group_id": 10, "name": "g"}}, "family_members": []any{map[string]any{"app_user_id": "x", "app_group_id": 10, "name": piiName, "relationship": "SELF", "id_type": piiName, "id_number": piiIDNumber}}},
		"unknown group":        map[string]any{"channel_user_id": "pii-u2", "user": map[string]any{"name": piiName}, "family_members": []any{member("x")}},
		"duplicate members":    map[string]any{"channel_user_id": "pii-u2", "user": map[string]any{"name": piiName}, "family_groups": []any{map[string]any{"app_group_id": 10, "name": "g"}}, "family_members": []any{member("x"), member("x")}},
		"unknown field":        map[string]any{"channel_user_id": "pii-u2", "user": map[string]any{"name": piiName, "home_address": piiAddress}},
		"different same user":  map[string]any{"channel_user_id": "pii-u1", "user": map[string]any{"name": piiName + "-changed", "phone": piiPhone}},
		"missing channel user": map[string]any{"user": map[string]any{"name": piiName, "phone": piiPhone}},
	} {
		d.answered("register: "+what, a.Do("POST", "/open/v1/channel/users", body))
	}
	d.refused("register: duplicate keys", a.Do("POST", "/open/v1/channel/users",
		`{"channel_user_id":"pii-u3","user":{"name":"`+piiName+`","phone":"`+piiPhone+`","phone":"`+piiPhone+`"}}`))
	d.refused("register: broken JSON", a.Do("POST", "/open/v1/channel/users", `{"channel_user_id":"pii-u3","user":{"name":"`+piiName+`","phone":"`+piiPhone+`"`))
	d.refused("register: invalid UTF-8", a.Do("POST", "/open/v1/channel/users", "{\"channel_user_id\":\"pii-u3\",\"user\":{\"name\":\""+piiName+"\xff\xfe\",\"phone\":\""+piiPhone+"\"}}"))
	d.refused("register: not an object", a.Do("POST", "/open/v1/channel/users", `["`+piiName+`","`+piiPhone+`"]`))

	// PATCH, member upserts and deletes.
	d.ok("patch", a.Do("PATCH", userPath, map[string]any{"nickname": piiNick, "email": piiEmail, "phone": piiPhone, "avatar": piiAvatar}))
	d.refused("patch: bad phone", a.Do("PATCH", userPath, map[string]any{"phone": "0" + piiPhone}))
	d.refused("patch: bad email", a.Do("PATCH", userPath, map[string]any{"email": piiName}))
	d.refused("patch: bad birth", a.Do("PATCH", userPath, map[string]any{"birth_date": "31/12/1949 " + piiBirth + "x"}))
	d.refused("patch: long nick", a.Do("PATCH", userPath, map[string]any{"nickname": long}))
	d.refused("patch: unknown user", a.Do("PATCH", "/open/v1/channel/users/999999999", map[string]any{"name": piiName, "phone": piiPhone}))
	d.ok("group", a.Do("POST", userPath+"/family-groups", map[string]any{"app_group_id": 20, "name": piiName + " parents"}))
	d.refused("group: long name", a.Do("POST", userPath+"/family-groups", map[string]any{"app_group_id": 21, "name": long}))
	var m struct {
		MemberID int64 `json:"member_id"`
	}
	dad := member("dad")
	dad["app_group_id"], dad["relationship"], dad["is_default"] = 20, "FATHER", false
	delete(dad, "id_type") // id documents are accepted only on the one-step register
	delete(dad, "id_number")
	d.ok("member", a.Do("POST", userPath+"/family-members", dad)).Data(t, &m)
	dad["name"] = piiName + " senior"
	d.ok("member update", a.Do("POST", userPath+"/family-members", dad))
	for what, bad := range map[string]map[string]any{
		"id number": {"id_number": piiIDNumber + "-" + piiPhone},
		"phone":     {"phone": piiName},
		"birth":     {"birth_date": piiBirth + "-" + piiRaw},
		"height":    {"height": piiPhone},
		"relation":  {"relationship": piiName},
		"group":     {"app_group_id": 99},
	} {
		body := member("bad")
		body["app_group_id"] = 20
		for k, v := range bad {
			body[k] = v
		}
		d.refused("member: bad "+what, a.Do("POST", userPath+"/family-members", body))
	}
	d.ok("member delete", a.Do("DELETE", fmt.Sprintf("%s/family-members/%d", userPath, m.MemberID), nil))
	d.refused("member delete again", a.Do("DELETE", fmt.Sprintf("%s/family-members/%d", userPath, m.MemberID), nil))
	d.refused("member delete by phone", a.Do("DELETE", userPath+"/family-members/"+piiPhone+"X", nil))
	a.Expect("GET", userPath, nil, http.StatusOK, "0")

	// Orders with receiver contact and address.
	p.AdminOK("POST", "/admin/v1/goods", map[string]any{"goods_code": "PII-BP", "goods_name": "Monitor"}, 201)
	order := map[string]any{"third_order_id": "pii-o1", "contact_person": piiName, "contact_phone": piiPhone, "address": piiAddress,
		"area_code": "110105", "area_text": piiAddress + " district", "items": []any{map[string]any{"goods_code": "PII-BP", "quantity": 1, "unit_price": 100}}}
	var od struct {
		OrderCode string `json:"order_code"`
	}
	d.ok("order", a.Do("POST", "/open/v1/order/create", order)).Data(t, &od)
	changed := map[string]any{}
	for k, v := range order {
		changed[k] = v
	}
	changed["address"] = piiAddress + " 2"
	d.refused("order: duplicate third id", a.Do("POST", "/open/v1/order/create", changed))
	for what, bad := range map[string]map[string]any{
		"phone":   {"contact_phone": piiName},
		"person":  {"contact_person": long},
		"address": {"address": strings.Repeat(piiAddress, 100)},
		"area":    {"area_code": piiAddress + piiAddress},
		"goods":   {"items": []any{map[string]any{"goods_code": piiName, "quantity": 1, "unit_price": 1}}},
		"types":   {"contact_phone": 13912345678, "address": []string{piiAddress}},
	} {
		body := map[string]any{}
		for k, v := range order {
			body[k] = v
		}
		body["third_order_id"] = "pii-bad-" + what
		for k, v := range bad {
			body[k] = v
		}
		d.refused("order: bad "+what, a.Do("POST", "/open/v1/order/create", body))
	}
	d.ok("order detail", a.Do("GET", "/open/v1/order/detail?order_code="+od.OrderCode, nil))
	d.ok("admin order", p.Admin("GET", "/admin/v1/orders/"+od.OrderCode, nil))
	d.refused("order reject: long reason", p.Admin("POST", "/admin/v1/orders/"+od.OrderCode+"/reject", map[string]any{"reason": long}))
	d.ok("order approve", p.Admin("POST", "/admin/v1/orders/"+od.OrderCode+"/approve", map[string]any{}))

	// Cards with holder name and phone, issued by a partner and by an operator; verify-use.
	station, partner, item := harness.BenefitSetup(t, p)
	p.ConfigureWebhook(partner, sink.srv.URL)
	expires := time.Now().Add(48 * time.Hour).Format(time.RFC3339)
	card := func(name, phone any) map[string]any {
		return map[string]any{"holder_name": name, "holder_phone": phone, "expires_at": expires, "items": []any{map[string]any{"benefit_item_id": item, "quantity": 3}}}
	}
	var issued struct {
		Cards []struct {
			CardNumber string `json:"card_number"`
		} `json:"cards"`
	}
	d.ok("batch issue", partner.Do("POST", "/open/v1/benefit-cards/batch-issue", map[string]any{"batch_id": "pii-b1", "cards": []any{card(piiHolder, piiPhone)}})).Data(t, &issued)
	d.refused("batch issue: bad phone", partner.Do("POST", "/open/v1/benefit-cards/batch-issue", map[string]any{"batch_id": "pii-b2", "cards": []any{card(piiHolder, piiHolder)}}))
	d.refused("batch issue: long name", partner.Do("POST", "/open/v1/benefit-cards/batch-issue", map[string]any{"batch_id": "pii-b3", "cards": []any{card(long, piiPhone)}}))
	d.refused("batch issue: types", partner.Do("POST", "/open/v1/benefit-cards/batch-issue", map[string]any{"batch_id": "pii-b4", "cards": []any{card([]string{piiHolder}, 13912345678)}}))
	d.note("batch issue: same batch id, other holder", partner.Do("POST", "/open/v1/benefit-cards/batch-issue", map[string]any{"batch_id": "pii-b1", "cards": []any{card(piiHolder+"2", piiPhone)}}))
	d.ok("operator issue", p.Admin("POST", "/admin/v1/benefit-cards", map[string]any{"issuer_app_id": partner.ID, "batch_id": "pii-op1", "cards": []any{card(piiHolder, piiPhone)}}))
	d.refused("operator issue: bad phone", p.Admin("POST", "/admin/v1/benefit-cards", map[string]any{"issuer_app_id": partner.ID, "batch_id": "pii-op2", "cards": []any{card(piiHolder, "1"+piiPhone)}}))
	number := issued.Cards[0].CardNumber
	d.ok("verify", station.Do("POST", "/open/v1/benefit-cards/verify-use", map[string]any{"card_number": number, "benefit_item_id": item, "points_code": "P-1", "remark": piiName}))
	d.refused("verify: long remark", station.Do("POST", "/open/v1/benefit-cards/verify-use", map[string]any{"card_number": number, "benefit_item_id": item, "points_code": "P-1", "remark": long}))
	d.refused("verify: phone as card", station.Do("POST", "/open/v1/benefit-cards/verify-use", map[string]any{"card_number": piiPhone, "benefit_item_id": item, "points_code": "P-1"}))
	d.ok("card detail", partner.Do("GET", "/open/v1/benefit-cards/detail?card_number="+number, nil))
	d.ok("admin card", p.Admin("GET", "/admin/v1/benefit-cards/"+number, nil))

	// Reports: raw device data and interpretation text; pull; daily report.
	up := p.Uploader("pii uploader")
	rawData := `{"indicators":[{"code":"heart_rate","value":72,"unit":"bpm"}],"patient":"` + piiRaw + `","name":"` + piiName + `"}`
	report := fmt.Sprintf(`{"open_user_id":%d,"request_report_id":"pii-r1","report_type":"BLOOD_PRESSURE","interpretation_result":%q,"interpretation_detail":{"note":%q},"examined_at":"%s","meta":{"operator_name":%q},"raw_data":%s}`,
		rd.OpenUserID, piiInterp, piiRaw, time.Now().In(p.Node.Location).Format("2006-01-02T15:04:05"), piiName, rawData)
	var rep struct {
		ID int64 `json:"id"`
	}
	d.ok("report", p.Ingest(up, "POST", "/admin/v1/health-reports", []byte(report))).Data(t, &rep)
	d.refused("report: other user, same key", p.Ingest(up, "POST", "/admin/v1/health-reports",
		[]byte(strings.Replace(report, fmt.Sprintf(`"open_user_id":%d`, rd.OpenUserID), `"open_user_id":987654321`, 1))))
	for what, body := range map[string]string{
		"raw as string":    fmt.Sprintf(`{"open_user_id":%d,"raw_data":%q}`, rd.OpenUserID, piiRaw),
		"raw broken":       fmt.Sprintf(`{"open_user_id":%d,"raw_data":{"x":"%s"`, rd.OpenUserID, piiRaw),
		"raw duplicate":    fmt.Sprintf(`{"open_user_id":%d,"raw_data":{"x":"%s","x":"%s"}}`, rd.OpenUserID, piiRaw, piiRaw),
		"interp too long":  fmt.Sprintf(`{"open_user_id":%d,"interpretation_result":%q}`, rd.OpenUserID, strings.Repeat(piiInterp, 2000)),
		"interp as number": fmt.Sprintf(`{"open_user_id":%d,"interpretation_result":{"x":%q}}`, rd.OpenUserID, piiInterp),
		"bad examined_at":  fmt.Sprintf(`{"open_user_id":%d,"examined_at":%q}`, rd.OpenUserID, piiBirth+"T99:99"+piiRaw),
		"operator long":    fmt.Sprintf(`{"open_user_id":%d,"meta":{"operator_name":%q}}`, rd.OpenUserID, long),
		"unbound user":     fmt.Sprintf(`{"open_user_id":987654321,"interpretation_result":%q,"raw_data":{"r":%q}}`, piiInterp, piiRaw),
	} {
		d.refused("report: "+what, p.Ingest(up, "POST", "/admin/v1/health-reports", []byte(body)))
	}
	// NUL and lone surrogates inside raw JSON: byte-exact raw data may keep them; nothing may fail loudly.
	for what, body := range map[string]string{
		"raw with NUL":    fmt.Sprintf(`{"open_user_id":%d,"request_report_id":"pii-nul","raw_data":{"x":"%s\u0000","y":"\ud800"}}`, rd.OpenUserID, piiRaw),
		"detail with NUL": fmt.Sprintf(`{"open_user_id":%d,"request_report_id":"pii-nul2","interpretation_detail":{"x":"%s\u0000"}}`, rd.OpenUserID, piiRaw),
	} {
		d.answered("report: "+what, p.Ingest(up, "POST", "/admin/v1/health-reports", []byte(body)))
	}
	d.ok("report patch", p.Ingest(up, "PATCH", fmt.Sprintf("/admin/v1/health-reports/%d", rep.ID), []byte(fmt.Sprintf(`{"interpretation_result":%q,"interpretation_detail":{"n":%q}}`, piiInterp+" 2", piiRaw))))
	d.refused("report patch: long", p.Ingest(up, "PATCH", fmt.Sprintf("/admin/v1/health-reports/%d", rep.ID), []byte(fmt.Sprintf(`{"interpretation_result":%q}`, strings.Repeat(piiInterp, 2000)))))
	d.refused("report patch: unknown", p.Ingest(up, "PATCH", "/admin/v1/health-reports/99999999", []byte(fmt.Sprintf(`{"interpretation_result":%q}`, piiInterp))))
	if err := p.Node.WaitCaughtUp(t.Context()); err != nil {
		t.Fatal(err)
	}
	d.ok("report pull", a.Pull(rep.ID))
	d.refused("report pull: other app", partner.Pull(rep.ID))
	_, tok := p.OAuth("/oauth/token", url.Values{"grant_type": {"client_credentials"}}, a.Key, a.Secret)
	access, _ := tok["access_token"].(string)
	daily := func(query string) harness.Response {
		req, _ := http.NewRequest("GET", p.Srv.URL+"/v1/health/daily-report?"+query, nil)
		req.Header.Set("Authorization", "Bearer "+access)
		req.Header.Set("X-App-Key", a.Key)
		return p.Send(req)
	}
	d.ok("daily report", daily(fmt.Sprintf("open_user_id=%d", rd.OpenUserID)))
	d.refused("daily report: bad date", daily("open_user_id=1&date="+url.QueryEscape(piiBirth+piiRaw)))
	d.refused("daily report: phone as user", daily("channel_user_id="+piiPhone))

	// Plugin sessions with an encrypted profile, and measurements.
	profile := measureplugin.Profile{Phone: piiPhone, Gender: "male", BirthDate: piiBirth, Height: 175, Weight: 7000, Name: piiName, Metadata: piiRaw}
	l, err := measureplugin.NewLaunch(a.Key, a.Secret, "pii-third", profile, "HOME_MULTI_BIO_MONITOR", "BP", true, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		SessionID string `json:"session_id"`
	}
	d.ok("session", p.Plugin("/plugin/v1/sessions", l)).Data(t, &s)
	d.refused("session: replay", p.Plugin("/plugin/v1/sessions", l))
	relaunch := func(pr measureplugin.Profile, device, mode string) measureplugin.Launch {
		l := l
		l.Nonce, l.DeviceKey, l.MeasureMode = harness.FreshNonce(), device, mode
		l.UserProfile, _ = measureplugin.EncryptProfile(a.Secret, a.Key, l.ThirdUserID, pr)
		l.Sign = harness.LaunchSign(a.Secret, a.Key, l.ThirdUserID, l.Timestamp, l.Nonce)
		return l
	}
	badPhone := profile
	badPhone.Phone = piiName
	d.refused("session: bad profile phone", p.Plugin("/plugin/v1/sessions", relaunch(badPhone, "HOME_MULTI_BIO_MONITOR", "BP")))
	badBirth := profile
	badBirth.BirthDate = piiBirth + "/" + piiRaw
	d.refused("session: bad profile birth", p.Plugin("/plugin/v1/sessions", relaunch(badBirth, "HOME_MULTI_BIO_MONITOR", "BP")))
	noHeight := profile
	noHeight.Height = 0
	d.refused("session: bca without height", p.Plugin("/plugin/v1/sessions", relaunch(noHeight, "BODY_COMPOSITION_ANALYSIS", "BCA")))
	forged := relaunch(profile, "HOME_MULTI_BIO_MONITOR", "BP")
	forged.UserProfile = "bm90IGEgcHJvZmlsZQ" + piiRaw
	d.refused("session: forged profile", p.Plugin("/plugin/v1/sessions", forged))
	unknownDevice := relaunch(profile, piiName, piiRaw)
	d.refused("session: unknown device", p.Plugin("/plugin/v1/sessions", unknownDevice))
	d.ok("measure", p.Plugin("/plugin/v1/sessions/"+s.SessionID+"/measurements", map[string]any{"device_sn": "BP-1", "data": map[string]any{"systolic": 121, "diastolic": 79, "note": piiRaw}}))
	d.answered("measure: NUL in data", p.Plugin("/plugin/v1/sessions/"+s.SessionID+"/measurements", `{"data":{"x":"`+piiRaw+`\u0000"}}`))
	d.refused("measure: data string", p.Plugin("/plugin/v1/sessions/"+s.SessionID+"/measurements", map[string]any{"data": piiRaw}))
	d.refused("measure: long sn", p.Plugin("/plugin/v1/sessions/"+s.SessionID+"/measurements", map[string]any{"device_sn": strings.Repeat(piiRaw, 50), "data": map[string]any{}}))
	d.refused("measure: unknown session", p.Plugin("/plugin/v1/sessions/"+piiPhone+"/measurements", map[string]any{"data": map[string]any{"x": piiRaw}}))

	// Sandbox mock: the third user id and device are partner-chosen; a bad device must not be echoed with its value.
	d.ok("sandbox mock", p.Send(a.RequestH("POST", "/sandbox/mock/measure", harness.Encode(t, map[string]any{"appKey": a.Key, "thirdUserId": piiName, "deviceKey": "HOME_MULTI_BIO_MONITOR", "measureMode": "BP"}), harness.FreshNonce(), time.Now())))
	d.note("sandbox mock: bad device", p.Send(a.RequestH("POST", "/sandbox/mock/measure", harness.Encode(t, map[string]any{"appKey": a.Key, "thirdUserId": piiName, "deviceKey": piiRaw, "measureMode": piiPhone}), harness.FreshNonce(), time.Now())))

	// Webhook reads; the deliveries themselves fail at the sink and are logged.
	d.ok("partner deliveries", a.Do("GET", "/open/v1/webhooks/deliveries", nil))
	d.ok("partner feed", a.Do("GET", "/open/v1/webhooks/events", nil))
	return sink
}

// A handler that panics with a value built from the request (a formatted
// message, an error wrapping a field) must not put that value in the log.
func TestLogsCarryNoPersonalDataFromPanics(t *testing.T) {
	t.Parallel()
	for _, value := range []any{
		"cannot store member " + piiName + " " + piiIDNumber,
		fmt.Errorf("phone %s: %w", piiPhone, io.ErrUnexpectedEOF),
	} {
		logs := &harness.SyncBuffer{}
		h := httpapi.Instrument(slog.New(slog.NewJSONHandler(logs, nil)), "/panics", nil, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			panic(value)
		}))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/panics", strings.NewReader(`{"name":"`+piiName+`"}`)))
		if rec.Code != http.StatusInternalServerError || !strings.Contains(logs.String(), `"msg":"panic"`) {
			t.Fatalf("panic %T: %d, log %s", value, rec.Code, logs.String())
		}
		if found := findPII(logs.String() + rec.Body.String()); found != nil {
			t.Errorf("panic %T logged personal data %q:\n%s", value, found, logs.String())
		}
	}
}
