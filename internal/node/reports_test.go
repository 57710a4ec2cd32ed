package node_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/measureplugin"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// signH is the test's own scheme H implementation, written from the spec.
func signH(secret, method, uri, ts, nonce string, body []byte) string {
	sum := sha256.Sum256(body)
	s := method + "\n" + uri + "\n" + ts + "\n" + nonce + "\n" + hex.EncodeToString(sum[:])
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(s))
	return hex.EncodeToString(m.Sum(nil))
}

var nonceSeq struct {
	sync.Mutex
	n int
}

func freshNonce() string {
	nonceSeq.Lock()
	defer nonceSeq.Unlock()
	nonceSeq.n++
	return fmt.Sprintf("n-%d-%d", time.Now().UnixNano(), nonceSeq.n)
}

// requestH builds a scheme H request; nonce "" omits X-Nonce.
func (a *app) requestH(method, uri string, body []byte, nonce string, now time.Time) *http.Request {
	a.p.t.Helper()
	req, err := http.NewRequest(method, a.p.srv.URL+uri, bytes.NewReader(body))
	if err != nil {
		a.p.t.Fatal(err)
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	req.Header.Set("X-App-Key", a.Key)
	req.Header.Set("X-Timestamp", ts)
	if nonce != "" {
		req.Header.Set("X-Nonce", nonce)
	}
	req.Header.Set("X-Signature", signH(a.Secret, method, uri, ts, nonce, body))
	return req
}

func (a *app) pull(id int64) response {
	a.p.t.Helper()
	return a.p.send(a.requestH("GET", fmt.Sprintf("/open/v1/health-reports/%d", id), nil, freshNonce(), time.Now()))
}

func (p *platform) uploader(name string) string {
	p.t.Helper()
	res := p.admin("POST", "/admin/v1/uploaders", map[string]any{"name": name})
	if res.Status != http.StatusCreated {
		p.t.Fatalf("uploader: %d %s", res.Status, res.Raw)
	}
	var u struct {
		Token string `json:"token"`
	}
	res.data(p.t, &u)
	return u.Token
}

func (p *platform) ingest(token, method, path string, body []byte) response {
	p.t.Helper()
	req, _ := http.NewRequest(method, p.srv.URL+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	return p.send(req)
}

// awkwardRaw is raw_data as a vendor might send it: odd key order, spacing,
// numbers beyond float64, escapes, unknown keys, and a waveform to drop.
const awkwardRaw = `{"z_last":1,  "data_source":"station","indicators":[{"code":"heart_rate","value":72,"unit":"bpm"},
 {"indicator_code":"SPO2","values":[{"key":"spo2","value":97.5,"unit":"%"}]}],
 "big":123456789012345678901234567890.123456789,"esc":"\u00e9\u4e2d <tag> & \"q\"",
 "report":{"report_type":"BLOOD_PRESSURE","raw_data":{"ecg":{"dat_base64":"QUJD","rate":500},"vendor_new_field":[1,2,{"x":null}]}},
 "dat_base64":"WFla","a_first":{"nested":true}}`

const awkwardStripped = `{"z_last":1,  "data_source":"station","indicators":[{"code":"heart_rate","value":72,"unit":"bpm"},
 {"indicator_code":"SPO2","values":[{"key":"spo2","value":97.5,"unit":"%"}]}],
 "big":123456789012345678901234567890.123456789,"esc":"\u00e9\u4e2d <tag> & \"q\"",
 "report":{"report_type":"BLOOD_PRESSURE","raw_data":{"ecg":{"rate":500},"vendor_new_field":[1,2,{"x":null}]}},
 "a_first":{"nested":true}}`

func reportBody(openUserID int64, extra string) []byte {
	return []byte(fmt.Sprintf(`{"open_user_id":%d,"report_type":"BLOOD_PRESSURE","measurement_no":"M-1","device_sn":"SN9",
"interpretation_result":"normal","interpretation_method":"ai","interpretation_detail":{"risk_level":"low"},
"examined_at":"2026-11-20T09:30:00+08:00","meta":{"points_code":"P001","data_source":"station","operator_name":"Nurse Wu","operator_platform_user_id":77}%s,
"raw_data":%s}`, openUserID, extra, awkwardRaw))
}

func keys(raw []byte) []string {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestHealthReportsEndToEnd(t *testing.T) {
	t.Parallel()
	readModels(t, func(t *testing.T, cfg node.Config) {
		cfg.WebhookAllowLoopback = true
		p := start(t, cfg)
		a := p.createApp("partner")
		rcv := newReceiver(t)
		rcv.secret = a.WebhookSecret
		p.configureWebhook(a, rcv.srv.URL, "health.report.*")
		var reg registerData
		a.expect("POST", "/open/v1/channel/users", registerBody("u-1"), http.StatusCreated, "0").data(t, &reg)
		up := p.uploader("station network")

		res := p.ingest(up, "POST", "/admin/v1/health-reports", reportBody(reg.OpenUserID, `,"request_report_id":"R-1"`))
		if res.Status != http.StatusCreated {
			t.Fatalf("ingest: %d %s", res.Status, res.Raw)
		}
		var created struct {
			ID int64 `json:"id"`
		}
		res.data(t, &created)

		// The webhook carries exactly the spec's fields.
		hook := rcv.waitFor(1)[0]
		if !hook.Verified || hook.Event != "health.report.created" {
			t.Fatalf("webhook %+v", hook)
		}
		if got := keys(hook.Body); !slices.Equal(got, []string{"channel_user_id", "delivery_id", "event", "occurred_at", "open_report_id", "open_user_id", "report_type"}) {
			t.Fatalf("webhook fields %v", got)
		}
		var body struct {
			OpenReportID  int64  `json:"open_report_id"`
			OpenUserID    int64  `json:"open_user_id"`
			ChannelUserID string `json:"channel_user_id"`
			ReportType    string `json:"report_type"`
		}
		_ = json.Unmarshal(hook.Body, &body)
		if body.OpenReportID != created.ID || body.OpenUserID != reg.OpenUserID || body.ChannelUserID != "u-1" || body.ReportType != "BLOOD_PRESSURE" {
			t.Fatalf("webhook body %s", hook.Body)
		}

		// Pull: raw_data byte for byte (waveforms dropped), every field, is_viewed after the first pull.
		first := a.pull(created.ID)
		if first.Status != http.StatusOK || first.Header.Get("X-RateLimit-Limit") != "60" {
			t.Fatalf("pull: %d %s", first.Status, first.Raw)
		}
		var data map[string]json.RawMessage
		first.data(t, &data)
		if string(data["raw_data"]) != awkwardStripped {
			t.Fatalf("raw_data changed:\n got %s\nwant %s", data["raw_data"], awkwardStripped)
		}
		want := []string{"app_id", "device_sn", "examined_at", "file_path", "id", "interpretation_detail", "interpretation_method", "interpretation_result", "interpreted_at",
			"is_viewed", "measurement_no", "meta", "open_member_id", "open_user_id", "raw_data", "report_type", "request_report_id", "uploaded_at"}
		if got := keys(first.Env.Data); !slices.Equal(got, want) {
			t.Fatalf("pull fields %v", got)
		}
		if string(data["is_viewed"]) != "false" || string(data["examined_at"]) != `"2026-11-20T09:30:00+08:00"` || string(data["interpretation_detail"]) != `{"risk_level":"low"}` {
			t.Fatalf("pull data %s", first.Env.Data)
		}
		if !strings.Contains(string(data["meta"]), `"operator_platform_user_id":77`) {
			t.Fatalf("meta %s", data["meta"])
		}
		var second map[string]json.RawMessage
		a.pull(created.ID).data(t, &second)
		if string(second["is_viewed"]) != "true" {
			t.Fatalf("is_viewed after a pull: %s", second["is_viewed"])
		}

		// Another app, a missing id, a malformed id: 404 without a code.
		other := p.createApp("other")
		for _, r := range []response{other.pull(created.ID), a.pull(created.ID + 1000), p.send(a.requestH("GET", "/open/v1/health-reports/abc", nil, freshNonce(), time.Now()))} {
			if r.Status != http.StatusNotFound || r.Env.Code != nil || bytes.Contains(r.Raw, []byte(`"code"`)) {
				t.Fatalf("expected a 404 without code: %d %s", r.Status, r.Raw)
			}
		}

		// A retried upload with the same report number is the same report.
		res = p.ingest(up, "POST", "/admin/v1/health-reports", reportBody(reg.OpenUserID, `,"request_report_id":"R-1"`))
		var again struct {
			ID      int64 `json:"id"`
			Created bool  `json:"created"`
		}
		res.data(t, &again)
		if res.Status != http.StatusOK || again.ID != created.ID || again.Created {
			t.Fatalf("retried upload: %d %s", res.Status, res.Raw)
		}

		// The same report number for another user is a conflict, not that report.
		var reg2 registerData
		a.expect("POST", "/open/v1/channel/users", registerBody("u-2"), http.StatusCreated, "0").data(t, &reg2)
		if res := p.ingest(up, "POST", "/admin/v1/health-reports", reportBody(reg2.OpenUserID, `,"request_report_id":"R-1"`)); res.Status != 409 || res.code() != "DUPLICATE_REQUEST_REPORT_ID" {
			t.Fatalf("report number reused for another user: %d %s", res.Status, res.Raw)
		}
		// Another uploader cannot change this uploader's report.
		if res := p.ingest(p.uploader("someone else"), "PATCH", fmt.Sprintf("/admin/v1/health-reports/%d", created.ID), []byte(`{"interpretation_result":"x"}`)); res.Status != 404 || res.code() != "REPORT_NOT_FOUND" {
			t.Fatalf("foreign uploader patch: %d %s", res.Status, res.Raw)
		}

		// Re-interpretation: health.report.updated, and the pull shows it.
		res = p.ingest(up, "PATCH", fmt.Sprintf("/admin/v1/health-reports/%d", created.ID), []byte(`{"interpretation_result":"elevated","interpretation_detail":{"risk_level":"medium"}}`))
		if res.Status != http.StatusOK {
			t.Fatalf("patch: %d %s", res.Status, res.Raw)
		}
		upd := rcv.waitFor(2)[1]
		if upd.Event != "health.report.updated" || upd.ID == hook.ID {
			t.Fatalf("update webhook %+v", upd)
		}
		var after map[string]json.RawMessage
		a.pull(created.ID).data(t, &after)
		if string(after["interpretation_result"]) != `"elevated"` || string(after["interpreted_at"]) == "null" || string(after["raw_data"]) != awkwardStripped {
			t.Fatalf("after patch %s", after["interpretation_result"])
		}

		// Refusals: a user no app registered, bad raw_data, no credential.
		if res := p.ingest(up, "POST", "/admin/v1/health-reports", reportBody(987654, "")); res.Status != 422 || res.code() != "USER_NOT_BOUND" {
			t.Fatalf("unbound user: %d %s", res.Status, res.Raw)
		}
		if res := p.ingest(up, "POST", "/admin/v1/health-reports", []byte(fmt.Sprintf(`{"open_user_id":%d,"raw_data":[1]}`, reg.OpenUserID))); res.Status != 422 || res.Env.Errors["raw_data"] == nil {
			t.Fatalf("raw_data array: %d %s", res.Status, res.Raw)
		}
		if res := p.ingest("upl_wrong", "POST", "/admin/v1/health-reports", reportBody(reg.OpenUserID, "")); res.Status != 401 {
			t.Fatalf("wrong uploader token: %d", res.Status)
		}
		rcv.quiet(2, 200*time.Millisecond)
	})
}

func TestSchemeHRefusals(t *testing.T) {
	t.Parallel()
	p := start(t, node.Config{DataDir: t.TempDir()})
	a := p.createApp("partner")
	path := "/open/v1/health-reports/1?x=1"
	cases := []struct {
		name string
		req  func() *http.Request
		code string
	}{
		{"missing key", func() *http.Request {
			r := a.requestH("GET", path, nil, freshNonce(), time.Now())
			r.Header.Del("X-App-Key")
			return r
		}, "MISSING_APP_KEY"},
		{"unknown key", func() *http.Request {
			r := a.requestH("GET", path, nil, freshNonce(), time.Now())
			r.Header.Set("X-App-Key", "ak_nobody")
			return r
		}, "MISSING_APP_KEY"},
		{"wrong signature", func() *http.Request {
			r := a.requestH("GET", path, nil, freshNonce(), time.Now())
			r.Header.Set("X-Signature", strings.Repeat("ab", 32))
			return r
		}, "INVALID_SIGNATURE"},
		{"query not signed", func() *http.Request {
			r := a.requestH("GET", "/open/v1/health-reports/1", nil, freshNonce(), time.Now())
			r.URL.RawQuery = "x=2"
			return r
		}, "INVALID_SIGNATURE"},
		{"stale", func() *http.Request {
			return a.requestH("GET", path, nil, freshNonce(), time.Now().Add(-301*time.Second))
		}, "INVALID_SIGNATURE"},
		{"future", func() *http.Request {
			// Far past the 300 s window: the timestamp is truncated to its
			// second and the server checks it later (seconds later on a
			// loaded machine), both of which pull it back towards the window.
			return a.requestH("GET", path, nil, freshNonce(), time.Now().Add(360*time.Second))
		}, "INVALID_SIGNATURE"},
	}
	for _, c := range cases {
		res := p.send(c.req())
		if res.Status != http.StatusUnauthorized || res.code() != c.code {
			t.Fatalf("%s: %d %s", c.name, res.Status, res.Raw)
		}
	}
	// Replays: the same nonce twice, and the same unsigned-nonce request twice.
	nonce := freshNonce()
	if res := p.send(a.requestH("GET", path, nil, nonce, time.Now())); res.Status != http.StatusNotFound {
		t.Fatalf("first use: %d %s", res.Status, res.Raw)
	}
	if res := p.send(a.requestH("GET", path, nil, nonce, time.Now())); res.Status != 401 || res.code() != "INVALID_SIGNATURE" {
		t.Fatalf("nonce replay: %d %s", res.Status, res.Raw)
	}
	now := time.Now()
	if res := p.send(a.requestH("GET", path, nil, "", now)); res.Status != http.StatusNotFound {
		t.Fatalf("without nonce: %d %s", res.Status, res.Raw)
	}
	if res := p.send(a.requestH("GET", path, nil, "", now)); res.Status != 401 {
		t.Fatalf("replayed request without nonce accepted: %d", res.Status)
	}
}

func TestReportPullRateLimit(t *testing.T) {
	t.Parallel()
	p := start(t, node.Config{DataDir: t.TempDir(), ReportPullLimit: 5})
	a := p.createApp("partner")
	b := p.createApp("other")
	for i := 0; i < 5; i++ {
		if res := a.pull(1); res.Status != http.StatusNotFound || res.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(4-i) {
			t.Fatalf("request %d: %d remaining %q", i, res.Status, res.Header.Get("X-RateLimit-Remaining"))
		}
	}
	res := a.pull(1)
	if res.Status != http.StatusTooManyRequests || res.Env.Code != nil || res.Header.Get("Retry-After") == "" || res.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("over the limit: %d %v %s", res.Status, res.Header, res.Raw)
	}
	if res := b.pull(1); res.Status != http.StatusNotFound {
		t.Fatalf("another app was limited: %d", res.Status)
	}
}

func (p *platform) oauth(path string, form url.Values, user, pass string) (int, map[string]any) {
	p.t.Helper()
	req, _ := http.NewRequest("POST", p.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	res := p.send(req)
	var out map[string]any
	_ = json.Unmarshal(res.Raw, &out)
	return res.Status, out
}

func TestDailyReport(t *testing.T) {
	t.Parallel()
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	p := start(t, node.Config{DataDir: t.TempDir(), Now: clock})
	a := p.createApp("partner")
	var reg registerData
	a.expect("POST", "/open/v1/channel/users", registerBody("u-1"), http.StatusCreated, "0").data(t, &reg)
	up := p.uploader("wearables")
	day := now.In(p.node.Location).Format(time.DateOnly)
	for i, raw := range []string{
		`{"indicators":[{"code":"heart_rate","value":70,"unit":"bpm"},{"code":"spo2","value":98,"unit":"%"}]}`,
		`{"indicators":[{"code":"HR","value":80,"unit":"次/分"}]}`,
	} {
		body := fmt.Sprintf(`{"open_user_id":%d,"request_report_id":"d-%d","examined_at":"%sT08:00:00","raw_data":%s}`, reg.OpenUserID, i, day, raw)
		if res := p.ingest(up, "POST", "/admin/v1/health-reports", []byte(body)); res.Status != http.StatusCreated {
			t.Fatalf("ingest: %d %s", res.Status, res.Raw)
		}
	}
	status, tok := p.oauth("/oauth/token", url.Values{"grant_type": {"client_credentials"}}, a.Key, a.Secret)
	if status != 200 || tok["token_type"] != "Bearer" || tok["expires_in"].(float64) != 7200 {
		t.Fatalf("token: %d %v", status, tok)
	}
	access := tok["access_token"].(string)
	daily := func(query, token, appKey string) response {
		req, _ := http.NewRequest("GET", p.srv.URL+"/v1/health/daily-report?"+query, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("X-App-Key", appKey)
		return p.send(req)
	}
	if err := p.node.WaitCaughtUp(t.Context()); err != nil {
		t.Fatal(err)
	}
	res := daily(fmt.Sprintf("open_user_id=%d", reg.OpenUserID), access, a.Key)
	var d struct {
		Date      string `json:"date"`
		HeartRate *struct {
			Avg  float64 `json:"avg"`
			Unit string  `json:"unit"`
		} `json:"heartRate"`
		SpO2 *struct {
			Avg  float64 `json:"avg"`
			Unit string  `json:"unit"`
		} `json:"spo2"`
		Insight string `json:"aiInsight"`
	}
	res.data(t, &d)
	if res.Status != 200 || d.Date != day || d.HeartRate == nil || d.HeartRate.Avg != 75 || d.HeartRate.Unit != "bpm" || d.SpO2 == nil || d.SpO2.Avg != 98 || !strings.Contains(d.Insight, "75") {
		t.Fatalf("daily: %d %s", res.Status, res.Raw)
	}
	empty := daily("channel_user_id=u-1&date=2020-01-01", access, a.Key)
	res.data(t, &d)
	if empty.Status != 200 || !bytes.Contains(empty.Raw, []byte(`"heartRate":null`)) {
		t.Fatalf("empty day: %s", empty.Raw)
	}
	other := p.createApp("other")
	for _, c := range []struct {
		name string
		res  response
		code string
	}{
		{"no token", daily("open_user_id=1", "", a.Key), "MISSING_TOKEN"},
		{"wrong token", daily("open_user_id=1", "at_nope", a.Key), "INVALID_TOKEN"},
		{"other app key", daily("open_user_id=1", access, other.Key), "INVALID_TOKEN"},
	} {
		if c.res.Status != 401 || c.res.code() != c.code || c.res.Header.Get("WWW-Authenticate") == "" {
			t.Fatalf("%s: %d %s", c.name, c.res.Status, c.res.Raw)
		}
	}
	if res := daily("open_user_id=999999", access, a.Key); res.Status != 404 || res.code() != "USER_NOT_FOUND" {
		t.Fatalf("unknown user: %d %s", res.Status, res.Raw)
	}
	if res := daily("open_user_id=1&date=2020-13-01", access, a.Key); res.Status != 422 {
		t.Fatalf("bad date: %d", res.Status)
	}
	if status, body := p.oauth("/oauth/token", url.Values{"grant_type": {"client_credentials"}}, a.Key, "wrong"); status != 401 || body["error"] != "invalid_client" {
		t.Fatalf("bad client: %d %v", status, body)
	}
	if status, body := p.oauth("/oauth/token", url.Values{"grant_type": {"password"}}, a.Key, a.Secret); status != 400 || body["error"] != "unsupported_grant_type" {
		t.Fatalf("grant type: %d %v", status, body)
	}
	if status, body := p.oauth("/oauth/token", url.Values{}, a.Key, a.Secret); status != 400 || body["error"] != "invalid_request" {
		t.Fatalf("no grant type: %d %v", status, body)
	}
	// Expiry and revocation.
	mu.Lock()
	now = now.Add(2*time.Hour + time.Second)
	mu.Unlock()
	if res := daily(fmt.Sprintf("open_user_id=%d", reg.OpenUserID), access, a.Key); res.Status != 401 {
		t.Fatalf("expired token accepted: %d", res.Status)
	}
	_, tok = p.oauth("/oauth/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {a.Key}, "client_secret": {a.Secret}}, "", "")
	fresh := tok["access_token"].(string)
	if res := daily(fmt.Sprintf("open_user_id=%d", reg.OpenUserID), fresh, a.Key); res.Status != 200 {
		t.Fatalf("fresh token: %d %s", res.Status, res.Raw)
	}
	if status, _ := p.oauth("/oauth/revoke", url.Values{"token": {fresh}}, a.Key, a.Secret); status != 200 {
		t.Fatalf("revoke: %d", status)
	}
	if res := daily(fmt.Sprintf("open_user_id=%d", reg.OpenUserID), fresh, a.Key); res.Status != 401 {
		t.Fatalf("revoked token accepted: %d", res.Status)
	}
}

// launchSign is the test's own launch signature, straight from the spec.
func launchSign(secret, appKey, third, ts, nonce string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(appKey + "|" + third + "|" + ts + "|" + nonce))
	return hex.EncodeToString(m.Sum(nil))
}

type pluginHook struct {
	Event          string  `json:"event"`
	DeliveryID     string  `json:"delivery_id"`
	AppID          int64   `json:"app_id"`
	MeasurementNo  string  `json:"measurement_no"`
	ThirdUserID    *string `json:"third_user_id"`
	PlatformUserID *int64  `json:"platform_user_id"`
	ReportType     string  `json:"report_type"`
	ReportURL      *string `json:"report_url"`
	Metadata       *string `json:"metadata"`
	OccurredAt     string  `json:"occurred_at"`
}

func (p *platform) plugin(path string, body any) response {
	p.t.Helper()
	req, _ := http.NewRequest("POST", p.srv.URL+path, bytes.NewReader(encode(p.t, body)))
	return p.send(req)
}

func TestPluginLaunchMeasureAndWebhook(t *testing.T) {
	t.Parallel()
	p := start(t, node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true})
	a := p.createApp("host")
	rcv := newReceiver(t)
	rcv.secret = a.WebhookSecret
	p.configureWebhook(a, rcv.srv.URL, "plugin.report.ready")
	var reg registerData
	a.expect("POST", "/open/v1/channel/users", registerBody("u-1"), http.StatusCreated, "0").data(t, &reg) // phone 13812345678

	// The host server builds launch parameters with the published package.
	l, err := measureplugin.NewLaunch(a.Key, a.Secret, "host user 1", measureplugin.Profile{Phone: "13812345678", Metadata: "order-9"}, "HOME_MULTI_BIO_MONITOR", "BP", true, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if l.Sign != launchSign(a.Secret, a.Key, l.ThirdUserID, l.Timestamp, l.Nonce) || len(l.Timestamp) != 10 {
		t.Fatalf("launch sign differs from the spec's construction: %+v", l)
	}
	if u := l.URL(); !strings.HasPrefix(u, "plugin://platform-measure/bind?") || !strings.HasSuffix(u, "&env=sandbox") {
		t.Fatalf("launch URL %s", u)
	}
	res := p.plugin("/plugin/v1/sessions", l)
	if res.Status != http.StatusCreated {
		t.Fatalf("open session: %d %s", res.Status, res.Raw)
	}
	var s struct {
		SessionID  string `json:"session_id"`
		ReportType string `json:"report_type"`
	}
	res.data(t, &s)
	if s.ReportType != "blood_pressure" {
		t.Fatalf("session %+v", s)
	}
	if res := p.plugin("/plugin/v1/sessions", l); res.Status != 401 || res.code() != "NONCE_ALREADY_USED" {
		t.Fatalf("replayed launch: %d %s", res.Status, res.Raw)
	}
	tampered := l
	tampered.Nonce, tampered.Sign = freshNonce(), strings.Repeat("0", 64)
	if res := p.plugin("/plugin/v1/sessions", tampered); res.Status != 401 || res.code() != "INVALID_SIGNATURE" {
		t.Fatalf("bad sign: %d %s", res.Status, res.Raw)
	}
	bca, _ := measureplugin.NewLaunch(a.Key, a.Secret, "u2", measureplugin.Profile{Gender: "male", BirthDate: "1980-01-01", Height: 180}, "BODY_COMPOSITION_ANALYSIS", "BCA", false, time.Now())
	noHeight := bca
	noHeight.Nonce = freshNonce()
	noHeight.UserProfile, _ = measureplugin.EncryptProfile(a.Secret, a.Key, "u2", measureplugin.Profile{Gender: "male", BirthDate: "1980-01-01"})
	noHeight.Sign = launchSign(a.Secret, a.Key, "u2", noHeight.Timestamp, noHeight.Nonce)
	if res := p.plugin("/plugin/v1/sessions", noHeight); res.Status != 422 || res.code() != "VALIDATION_ERROR" {
		t.Fatalf("bca without height: %d %s", res.Status, res.Raw)
	}

	// Measure: the webhook names the measurement, binds the phone's user, echoes metadata.
	var m struct {
		MeasureID string `json:"measureId"`
	}
	res = p.plugin("/plugin/v1/sessions/"+s.SessionID+"/measurements", map[string]any{"device_sn": "BP-1", "data": map[string]any{"systolic": 121, "diastolic": 79}})
	if res.Status != http.StatusCreated {
		t.Fatalf("measure: %d %s", res.Status, res.Raw)
	}
	res.data(t, &m)
	var again struct {
		MeasureID string `json:"measureId"`
	}
	p.plugin("/plugin/v1/sessions/"+s.SessionID+"/measurements", map[string]any{"data": map[string]any{"systolic": 1}}).data(t, &again)
	if again.MeasureID != m.MeasureID {
		t.Fatalf("a repeated submit made another measurement: %s vs %s", again.MeasureID, m.MeasureID)
	}
	hook := rcv.waitFor(1)[0]
	var body pluginHook
	_ = json.Unmarshal(hook.Body, &body)
	if !hook.Verified || body.Event != "plugin.report.ready" || body.MeasurementNo != m.MeasureID || body.ReportType != "blood_pressure" || body.AppID != a.ID ||
		body.ThirdUserID == nil || *body.ThirdUserID != "host user 1" || body.PlatformUserID == nil || *body.PlatformUserID != reg.OpenUserID ||
		body.Metadata == nil || *body.Metadata != "order-9" || body.ReportURL != nil || body.DeliveryID != hook.ID {
		t.Fatalf("plugin webhook %s", hook.Body)
	}
	if got := keys(hook.Body); len(got) != 10 {
		t.Fatalf("plugin webhook fields %v", got)
	}

	// Body composition waits for the algorithm step, then reports ready.
	res = p.plugin("/plugin/v1/sessions", bca)
	if res.Status != http.StatusCreated {
		t.Fatalf("bca session: %d %s", res.Status, res.Raw)
	}
	res.data(t, &s)
	p.plugin("/plugin/v1/sessions/"+s.SessionID+"/measurements", map[string]any{"data": map[string]any{"weight": 81.0}}).data(t, &m)
	hook = rcv.waitFor(2)[1]
	_ = json.Unmarshal(hook.Body, &body)
	if body.ReportType != "bca" || body.MeasurementNo != m.MeasureID || body.PlatformUserID != nil {
		t.Fatalf("bca webhook %s", hook.Body)
	}
	var history struct {
		Events []struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		} `json:"events"`
	}
	// The analysis result is health data: an auditor reveals it, with a reason.
	_, auditor := p.operator("auditor", "auditor")
	p.as(auditor, "GET", "/admin/v1/history?reveal=true&reason=test&stream=plugin-session-"+s.SessionID, nil).data(t, &history)
	if n := len(history.Events); n != 3 || history.Events[2].Type != "plugin.measurement.analyzed" || !bytes.Contains(history.Events[2].Data, []byte(`\"bmi\":25`)) {
		t.Fatalf("bca history %+v", history)
	}
	if res := p.plugin("/plugin/v1/sessions/nope/measurements", map[string]any{"data": map[string]any{}}); res.Status != 404 || res.code() != "SESSION_NOT_FOUND" {
		t.Fatalf("unknown session: %d %s", res.Status, res.Raw)
	}
}

func TestSandboxMockSendsReadyWithinASecond(t *testing.T) {
	t.Parallel()
	p := start(t, node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true})
	a := p.createApp("sandbox host")
	rcv := newReceiver(t)
	rcv.secret = a.WebhookSecret
	p.configureWebhook(a, rcv.srv.URL)
	for i, device := range [][2]string{{"HOME_MULTI_BIO_MONITOR", "BP"}, {"HEARTLOG_ECG_RECORDER", "ECG"}, {"BODY_COMPOSITION_ANALYSIS", "BCA"}} {
		body := encode(t, map[string]any{"appKey": a.Key, "thirdUserId": "t1", "deviceKey": device[0], "measureMode": device[1]})
		start := time.Now()
		res := p.send(a.requestH("POST", "/sandbox/mock/measure", body, freshNonce(), time.Now()))
		if res.Status != http.StatusOK {
			t.Fatalf("mock: %d %s", res.Status, res.Raw)
		}
		var m struct {
			MeasureID string `json:"measureId"`
		}
		res.data(t, &m)
		hook := rcv.waitFor(i + 1)[i]
		t.Logf("%s: plugin.report.ready %v after the mock call started", device[0], time.Since(start))
		var b pluginHook
		_ = json.Unmarshal(hook.Body, &b)
		if b.MeasurementNo != m.MeasureID || !hook.Verified {
			t.Fatalf("mock webhook %s", hook.Body)
		}
	}
	prod := p.admin("POST", "/admin/v1/apps", map[string]any{"name": "prod", "environment": "production", "scopes": allScopes})
	var pa app
	prod.data(t, &pa)
	pa.p = p
	body := encode(t, map[string]any{"appKey": pa.Key, "thirdUserId": "t1", "deviceKey": "HOME_SPO2_RING", "measureMode": "SPO2"})
	if res := p.send(pa.requestH("POST", "/sandbox/mock/measure", body, freshNonce(), time.Now())); res.Status != 403 || res.code() != "SANDBOX_ONLY" {
		t.Fatalf("production app: %d %s", res.Status, res.Raw)
	}
}

func TestPluginEventsAreDeadLettered(t *testing.T) {
	t.Parallel()
	schedule := []time.Duration{5 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond}
	// Six failures in a row would open the endpoint's breaker before the
	// last attempt; this test is about the schedule running out.
	p := start(t, node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true, WebhookSchedule: schedule, WebhookBreakerFailures: 1000})
	a := p.createApp("host")
	rcv := newReceiver(t)
	rcv.secret = a.WebhookSecret
	rcv.script(500, 500, 500, 500, 500, 500)
	p.configureWebhook(a, rcv.srv.URL)
	body := encode(t, map[string]any{"appKey": a.Key, "thirdUserId": "t1", "deviceKey": "HOME_SPO2_RING", "measureMode": "SPO2"})
	if res := p.send(a.requestH("POST", "/sandbox/mock/measure", body, freshNonce(), time.Now())); res.Status != 200 {
		t.Fatalf("mock: %d", res.Status)
	}
	first := rcv.waitFor(6)[0]
	v := p.waitDelivery(first.ID, "dead_letter")
	if v.Attempts != 6 {
		t.Fatalf("dead letter after %d attempts", v.Attempts)
	}
	var list struct {
		Deliveries []deliveryView `json:"deliveries"`
	}
	a.expect("GET", "/open/v1/webhooks/deliveries?status=dead_letter", nil, http.StatusOK, "0").data(t, &list)
	if len(list.Deliveries) != 1 || list.Deliveries[0].DeliveryID != first.ID {
		t.Fatalf("dead-letter list %+v", list)
	}
}
