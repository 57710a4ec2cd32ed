package reports_test

import (
	"bytes"
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

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/measureplugin"
	"github.com/healthtech/partner-open-platform/internal/node"
)

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
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		cfg.WebhookAllowLoopback = true
		p := harness.Start(t, cfg)
		a := p.CreateApp("partner")
		rcv := harness.NewReceiver(t)
		rcv.Secret = a.WebhookSecret
		p.ConfigureWebhook(a, rcv.Srv.URL, "health.report.*")
		var reg harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0").Data(t, &reg)
		up := p.Uploader("station network")

		res := p.Ingest(up, "POST", "/admin/v1/health-reports", harness.ReportBody(reg.OpenUserID, `,"request_report_id":"R-1"`))
		if res.Status != http.StatusCreated {
			t.Fatalf("ingest: %d %s", res.Status, res.Raw)
		}
		var created struct {
			ID int64 `json:"id"`
		}
		res.Data(t, &created)

		// The webhook carries exactly the spec's fields.
		hook := rcv.WaitFor(1)[0]
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
		first := a.Pull(created.ID)
		if first.Status != http.StatusOK || first.Header.Get("X-RateLimit-Limit") != "60" {
			t.Fatalf("pull: %d %s", first.Status, first.Raw)
		}
		var data map[string]json.RawMessage
		first.Data(t, &data)
		if string(data["raw_data"]) != harness.AwkwardStripped {
			t.Fatalf("raw_data changed:\n got %s\nwant %s", data["raw_data"], harness.AwkwardStripped)
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
		a.Pull(created.ID).Data(t, &second)
		if string(second["is_viewed"]) != "true" {
			t.Fatalf("is_viewed after a pull: %s", second["is_viewed"])
		}

		// Another app, a missing id, a malformed id: 404 without a code.
		other := p.CreateApp("other")
		for _, r := range []harness.Response{other.Pull(created.ID), a.Pull(created.ID + 1000), p.Send(a.RequestH("GET", "/open/v1/health-reports/abc", nil, harness.FreshNonce(), time.Now()))} {
			if r.Status != http.StatusNotFound || r.Env.Code != nil || bytes.Contains(r.Raw, []byte(`"code"`)) {
				t.Fatalf("expected a 404 without code: %d %s", r.Status, r.Raw)
			}
		}

		// A retried upload with the same report number is the same report.
		res = p.Ingest(up, "POST", "/admin/v1/health-reports", harness.ReportBody(reg.OpenUserID, `,"request_report_id":"R-1"`))
		var again struct {
			ID      int64 `json:"id"`
			Created bool  `json:"created"`
		}
		res.Data(t, &again)
		if res.Status != http.StatusOK || again.ID != created.ID || again.Created {
			t.Fatalf("retried upload: %d %s", res.Status, res.Raw)
		}

		// The same report number for another user is a conflict, not that report.
		var reg2 harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-2"), http.StatusCreated, "0").Data(t, &reg2)
		if res := p.Ingest(up, "POST", "/admin/v1/health-reports", harness.ReportBody(reg2.OpenUserID, `,"request_report_id":"R-1"`)); res.Status != 409 || res.Code() != "DUPLICATE_REQUEST_REPORT_ID" {
			t.Fatalf("report number reused for another user: %d %s", res.Status, res.Raw)
		}
		// Another uploader cannot change this uploader's report.
		if res := p.Ingest(p.Uploader("someone else"), "PATCH", fmt.Sprintf("/admin/v1/health-reports/%d", created.ID), []byte(`{"interpretation_result":"x"}`)); res.Status != 404 || res.Code() != "REPORT_NOT_FOUND" {
			t.Fatalf("foreign uploader patch: %d %s", res.Status, res.Raw)
		}

		// Re-interpretation: health.report.updated, and the pull shows it.
		res = p.Ingest(up, "PATCH", fmt.Sprintf("/admin/v1/health-reports/%d", created.ID), []byte(`{"interpretation_result":"elevated","interpretation_detail":{"risk_level":"medium"}}`))
		if res.Status != http.StatusOK {
			t.Fatalf("patch: %d %s", res.Status, res.Raw)
		}
		upd := rcv.WaitFor(2)[1]
		if upd.Event != "health.report.updated" || upd.ID == hook.ID {
			t.Fatalf("update webhook %+v", upd)
		}
		var after map[string]json.RawMessage
		a.Pull(created.ID).Data(t, &after)
		if string(after["interpretation_result"]) != `"elevated"` || string(after["interpreted_at"]) == "null" || string(after["raw_data"]) != harness.AwkwardStripped {
			t.Fatalf("after patch %s", after["interpretation_result"])
		}

		// Refusals: a user no app registered, bad raw_data, no credential.
		if res := p.Ingest(up, "POST", "/admin/v1/health-reports", harness.ReportBody(987654, "")); res.Status != 422 || res.Code() != "USER_NOT_BOUND" {
			t.Fatalf("unbound user: %d %s", res.Status, res.Raw)
		}
		if res := p.Ingest(up, "POST", "/admin/v1/health-reports", []byte(fmt.Sprintf(`{"open_user_id":%d,"raw_data":[1]}`, reg.OpenUserID))); res.Status != 422 || res.Env.Errors["raw_data"] == nil {
			t.Fatalf("raw_data array: %d %s", res.Status, res.Raw)
		}
		if res := p.Ingest("upl_wrong", "POST", "/admin/v1/health-reports", harness.ReportBody(reg.OpenUserID, "")); res.Status != 401 {
			t.Fatalf("wrong uploader token: %d", res.Status)
		}
		rcv.Quiet(2, 200*time.Millisecond)
	})
}

func TestSchemeHRefusals(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir()})
	a := p.CreateApp("partner")
	path := "/open/v1/health-reports/1?x=1"
	cases := []struct {
		name string
		req  func() *http.Request
		code string
	}{
		{"missing key", func() *http.Request {
			r := a.RequestH("GET", path, nil, harness.FreshNonce(), time.Now())
			r.Header.Del("X-App-Key")
			return r
		}, "MISSING_APP_KEY"},
		{"unknown key", func() *http.Request {
			r := a.RequestH("GET", path, nil, harness.FreshNonce(), time.Now())
			r.Header.Set("X-App-Key", "ak_nobody")
			return r
		}, "MISSING_APP_KEY"},
		{"wrong signature", func() *http.Request {
			r := a.RequestH("GET", path, nil, harness.FreshNonce(), time.Now())
			r.Header.Set("X-Signature", strings.Repeat("ab", 32))
			return r
		}, "INVALID_SIGNATURE"},
		{"query not signed", func() *http.Request {
			r := a.RequestH("GET", "/open/v1/health-reports/1", nil, harness.FreshNonce(), time.Now())
			r.URL.RawQuery = "x=2"
			return r
		}, "INVALID_SIGNATURE"},
		{"stale", func() *http.Request {
			return a.RequestH("GET", path, nil, harness.FreshNonce(), time.Now().Add(-301*time.Second))
		}, "INVALID_SIGNATURE"},
		{"future", func() *http.Request {
			// Far past the 300 s window: the timestamp is truncated to its
			// second and the server checks it later (seconds later on a
			// loaded machine), both of which pull it back towards the window.
			return a.RequestH("GET", path, nil, harness.FreshNonce(), time.Now().Add(360*time.Second))
		}, "INVALID_SIGNATURE"},
	}
	for _, c := range cases {
		res := p.Send(c.req())
		if res.Status != http.StatusUnauthorized || res.Code() != c.code {
			t.Fatalf("%s: %d %s", c.name, res.Status, res.Raw)
		}
	}
	// Replays: the same nonce twice, and the same unsigned-nonce request twice.
	nonce := harness.FreshNonce()
	if res := p.Send(a.RequestH("GET", path, nil, nonce, time.Now())); res.Status != http.StatusNotFound {
		t.Fatalf("first use: %d %s", res.Status, res.Raw)
	}
	if res := p.Send(a.RequestH("GET", path, nil, nonce, time.Now())); res.Status != 401 || res.Code() != "INVALID_SIGNATURE" {
		t.Fatalf("nonce replay: %d %s", res.Status, res.Raw)
	}
	now := time.Now()
	if res := p.Send(a.RequestH("GET", path, nil, "", now)); res.Status != http.StatusNotFound {
		t.Fatalf("without nonce: %d %s", res.Status, res.Raw)
	}
	if res := p.Send(a.RequestH("GET", path, nil, "", now)); res.Status != 401 {
		t.Fatalf("replayed request without nonce accepted: %d", res.Status)
	}
}

func TestReportPullRateLimit(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir(), ReportPullLimit: 5})
	a := p.CreateApp("partner")
	b := p.CreateApp("other")
	for i := 0; i < 5; i++ {
		if res := a.Pull(1); res.Status != http.StatusNotFound || res.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(4-i) {
			t.Fatalf("request %d: %d remaining %q", i, res.Status, res.Header.Get("X-RateLimit-Remaining"))
		}
	}
	res := a.Pull(1)
	if res.Status != http.StatusTooManyRequests || res.Env.Code != nil || res.Header.Get("Retry-After") == "" || res.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("over the limit: %d %v %s", res.Status, res.Header, res.Raw)
	}
	if res := b.Pull(1); res.Status != http.StatusNotFound {
		t.Fatalf("another app was limited: %d", res.Status)
	}
}

func TestDailyReport(t *testing.T) {
	t.Parallel()
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	p := harness.Start(t, node.Config{DataDir: t.TempDir(), Now: clock})
	a := p.CreateApp("partner")
	var reg harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0").Data(t, &reg)
	up := p.Uploader("wearables")
	day := now.In(p.Node.Location).Format(time.DateOnly)
	for i, raw := range []string{
		`{"indicators":[{"code":"heart_rate","value":70,"unit":"bpm"},{"code":"spo2","value":98,"unit":"%"}]}`,
		`{"indicators":[{"code":"HR","value":80,"unit":"次/分"}]}`,
	} {
		body := fmt.Sprintf(`{"open_user_id":%d,"request_report_id":"d-%d","examined_at":"%sT08:00:00","raw_data":%s}`, reg.OpenUserID, i, day, raw)
		if res := p.Ingest(up, "POST", "/admin/v1/health-reports", []byte(body)); res.Status != http.StatusCreated {
			t.Fatalf("ingest: %d %s", res.Status, res.Raw)
		}
	}
	status, tok := p.OAuth("/oauth/token", url.Values{"grant_type": {"client_credentials"}}, a.Key, a.Secret)
	if status != 200 || tok["token_type"] != "Bearer" || tok["expires_in"].(float64) != 7200 {
		t.Fatalf("token: %d %v", status, tok)
	}
	access := tok["access_token"].(string)
	daily := func(query, token, appKey string) harness.Response {
		req, _ := http.NewRequest("GET", p.Srv.URL+"/v1/health/daily-report?"+query, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("X-App-Key", appKey)
		return p.Send(req)
	}
	if err := p.Node.WaitCaughtUp(t.Context()); err != nil {
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
	res.Data(t, &d)
	if res.Status != 200 || d.Date != day || d.HeartRate == nil || d.HeartRate.Avg != 75 || d.HeartRate.Unit != "bpm" || d.SpO2 == nil || d.SpO2.Avg != 98 || !strings.Contains(d.Insight, "75") {
		t.Fatalf("daily: %d %s", res.Status, res.Raw)
	}
	empty := daily("channel_user_id=u-1&date=2020-01-01", access, a.Key)
	res.Data(t, &d)
	if empty.Status != 200 || !bytes.Contains(empty.Raw, []byte(`"heartRate":null`)) {
		t.Fatalf("empty day: %s", empty.Raw)
	}
	other := p.CreateApp("other")
	for _, c := range []struct {
		name string
		res  harness.Response
		code string
	}{
		{"no token", daily("open_user_id=1", "", a.Key), "MISSING_TOKEN"},
		{"wrong token", daily("open_user_id=1", "at_nope", a.Key), "INVALID_TOKEN"},
		{"other app key", daily("open_user_id=1", access, other.Key), "INVALID_TOKEN"},
	} {
		if c.res.Status != 401 || c.res.Code() != c.code || c.res.Header.Get("WWW-Authenticate") == "" {
			t.Fatalf("%s: %d %s", c.name, c.res.Status, c.res.Raw)
		}
	}
	if res := daily("open_user_id=999999", access, a.Key); res.Status != 404 || res.Code() != "USER_NOT_FOUND" {
		t.Fatalf("unknown user: %d %s", res.Status, res.Raw)
	}
	if res := daily("open_user_id=1&date=2020-13-01", access, a.Key); res.Status != 422 {
		t.Fatalf("bad date: %d", res.Status)
	}
	if status, body := p.OAuth("/oauth/token", url.Values{"grant_type": {"client_credentials"}}, a.Key, "wrong"); status != 401 || body["error"] != "invalid_client" {
		t.Fatalf("bad client: %d %v", status, body)
	}
	if status, body := p.OAuth("/oauth/token", url.Values{"grant_type": {"password"}}, a.Key, a.Secret); status != 400 || body["error"] != "unsupported_grant_type" {
		t.Fatalf("grant type: %d %v", status, body)
	}
	if status, body := p.OAuth("/oauth/token", url.Values{}, a.Key, a.Secret); status != 400 || body["error"] != "invalid_request" {
		t.Fatalf("no grant type: %d %v", status, body)
	}
	// Expiry and revocation.
	mu.Lock()
	now = now.Add(2*time.Hour + time.Second)
	mu.Unlock()
	if res := daily(fmt.Sprintf("open_user_id=%d", reg.OpenUserID), access, a.Key); res.Status != 401 {
		t.Fatalf("expired token accepted: %d", res.Status)
	}
	_, tok = p.OAuth("/oauth/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {a.Key}, "client_secret": {a.Secret}}, "", "")
	fresh := tok["access_token"].(string)
	if res := daily(fmt.Sprintf("open_user_id=%d", reg.OpenUserID), fresh, a.Key); res.Status != 200 {
		t.Fatalf("fresh token: %d %s", res.Status, res.Raw)
	}
	if status, _ := p.OAuth("/oauth/revoke", url.Values{"token": {fresh}}, a.Key, a.Secret); status != 200 {
		t.Fatalf("revoke: %d", status)
	}
	if res := daily(fmt.Sprintf("open_user_id=%d", reg.OpenUserID), fresh, a.Key); res.Status != 401 {
		t.Fatalf("revoked token accepted: %d", res.Status)
	}
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

func TestPluginLaunchMeasureAndWebhook(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true})
	a := p.CreateApp("host")
	rcv := harness.NewReceiver(t)
	rcv.Secret = a.WebhookSecret
	p.ConfigureWebhook(a, rcv.Srv.URL, "plugin.report.ready")
	var reg harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0").Data(t, &reg) // phone 13812345678

	// The host server builds launch parameters with the published package.
	l, err := measureplugin.NewLaunch(a.Key, a.Secret, "host user 1", measureplugin.Profile{Phone: "13812345678", Metadata: "order-9"}, "HOME_MULTI_BIO_MONITOR", "BP", true, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if l.Sign != harness.LaunchSign(a.Secret, a.Key, l.ThirdUserID, l.Timestamp, l.Nonce) || len(l.Timestamp) != 10 {
		t.Fatalf("launch sign differs from the spec's construction: %+v", l)
	}
	if u := l.URL(); !strings.HasPrefix(u, "plugin://platform-measure/bind?") || !strings.HasSuffix(u, "&env=sandbox") {
		t.Fatalf("launch URL %s", u)
	}
	res := p.Plugin("/plugin/v1/sessions", l)
	if res.Status != http.StatusCreated {
		t.Fatalf("open session: %d %s", res.Status, res.Raw)
	}
	var s struct {
		SessionID  string `json:"session_id"`
		ReportType string `json:"report_type"`
	}
	res.Data(t, &s)
	if s.ReportType != "blood_pressure" {
		t.Fatalf("session %+v", s)
	}
	if res := p.Plugin("/plugin/v1/sessions", l); res.Status != 401 || res.Code() != "NONCE_ALREADY_USED" {
		t.Fatalf("replayed launch: %d %s", res.Status, res.Raw)
	}
	tampered := l
	tampered.Nonce, tampered.Sign = harness.FreshNonce(), strings.Repeat("0", 64)
	if res := p.Plugin("/plugin/v1/sessions", tampered); res.Status != 401 || res.Code() != "INVALID_SIGNATURE" {
		t.Fatalf("bad sign: %d %s", res.Status, res.Raw)
	}
	bca, _ := measureplugin.NewLaunch(a.Key, a.Secret, "u2", measureplugin.Profile{Gender: "male", BirthDate: "1980-01-01", Height: 180}, "BODY_COMPOSITION_ANALYSIS", "BCA", false, time.Now())
	noHeight := bca
	noHeight.Nonce = harness.FreshNonce()
	noHeight.UserProfile, _ = measureplugin.EncryptProfile(a.Secret, a.Key, "u2", measureplugin.Profile{Gender: "male", BirthDate: "1980-01-01"})
	noHeight.Sign = harness.LaunchSign(a.Secret, a.Key, "u2", noHeight.Timestamp, noHeight.Nonce)
	if res := p.Plugin("/plugin/v1/sessions", noHeight); res.Status != 422 || res.Code() != "VALIDATION_ERROR" {
		t.Fatalf("bca without height: %d %s", res.Status, res.Raw)
	}

	// Measure: the webhook names the measurement, binds the phone's user, echoes metadata.
	var m struct {
		MeasureID string `json:"measureId"`
	}
	res = p.Plugin("/plugin/v1/sessions/"+s.SessionID+"/measurements", map[string]any{"device_sn": "BP-1", "data": map[string]any{"systolic": 121, "diastolic": 79}})
	if res.Status != http.StatusCreated {
		t.Fatalf("measure: %d %s", res.Status, res.Raw)
	}
	res.Data(t, &m)
	var again struct {
		MeasureID string `json:"measureId"`
	}
	p.Plugin("/plugin/v1/sessions/"+s.SessionID+"/measurements", map[string]any{"data": map[string]any{"systolic": 1}}).Data(t, &again)
	if again.MeasureID != m.MeasureID {
		t.Fatalf("a repeated submit made another measurement: %s vs %s", again.MeasureID, m.MeasureID)
	}
	hook := rcv.WaitFor(1)[0]
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
	res = p.Plugin("/plugin/v1/sessions", bca)
	if res.Status != http.StatusCreated {
		t.Fatalf("bca session: %d %s", res.Status, res.Raw)
	}
	res.Data(t, &s)
	p.Plugin("/plugin/v1/sessions/"+s.SessionID+"/measurements", map[string]any{"data": map[string]any{"weight": 81.0}}).Data(t, &m)
	hook = rcv.WaitFor(2)[1]
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
	_, auditor := p.Operator("auditor", "auditor")
	p.As(auditor, "GET", "/admin/v1/history?reveal=true&reason=test&stream=plugin-session-"+s.SessionID, nil).Data(t, &history)
	if n := len(history.Events); n != 3 || history.Events[2].Type != "plugin.measurement.analyzed" || !bytes.Contains(history.Events[2].Data, []byte(`\"bmi\":25`)) {
		t.Fatalf("bca history %+v", history)
	}
	if res := p.Plugin("/plugin/v1/sessions/nope/measurements", map[string]any{"data": map[string]any{}}); res.Status != 404 || res.Code() != "SESSION_NOT_FOUND" {
		t.Fatalf("unknown session: %d %s", res.Status, res.Raw)
	}
}

func TestSandboxMockSendsReadyWithinASecond(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true})
	a := p.CreateApp("sandbox host")
	rcv := harness.NewReceiver(t)
	rcv.Secret = a.WebhookSecret
	p.ConfigureWebhook(a, rcv.Srv.URL)
	for i, device := range [][2]string{{"HOME_MULTI_BIO_MONITOR", "BP"}, {"HEARTLOG_ECG_RECORDER", "ECG"}, {"BODY_COMPOSITION_ANALYSIS", "BCA"}} {
		body := harness.Encode(t, map[string]any{"appKey": a.Key, "thirdUserId": "t1", "deviceKey": device[0], "measureMode": device[1]})
		start := time.Now()
		res := p.Send(a.RequestH("POST", "/sandbox/mock/measure", body, harness.FreshNonce(), time.Now()))
		if res.Status != http.StatusOK {
			t.Fatalf("mock: %d %s", res.Status, res.Raw)
		}
		var m struct {
			MeasureID string `json:"measureId"`
		}
		res.Data(t, &m)
		hook := rcv.WaitFor(i + 1)[i]
		t.Logf("%s: plugin.report.ready %v after the mock call started", device[0], time.Since(start))
		var b pluginHook
		_ = json.Unmarshal(hook.Body, &b)
		if b.MeasurementNo != m.MeasureID || !hook.Verified {
			t.Fatalf("mock webhook %s", hook.Body)
		}
	}
	prod := p.Admin("POST", "/admin/v1/apps", map[string]any{"name": "prod", "environment": "production", "scopes": harness.AllScopes})
	var pa harness.App
	prod.Data(t, &pa)
	pa.P = p
	body := harness.Encode(t, map[string]any{"appKey": pa.Key, "thirdUserId": "t1", "deviceKey": "HOME_SPO2_RING", "measureMode": "SPO2"})
	if res := p.Send(pa.RequestH("POST", "/sandbox/mock/measure", body, harness.FreshNonce(), time.Now())); res.Status != 403 || res.Code() != "SANDBOX_ONLY" {
		t.Fatalf("production app: %d %s", res.Status, res.Raw)
	}
}

func TestPluginEventsAreDeadLettered(t *testing.T) {
	t.Parallel()
	schedule := []time.Duration{5 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond}
	// Six failures in a row would open the endpoint's breaker before the
	// last attempt; this test is about the schedule running out.
	p := harness.Start(t, node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true, WebhookSchedule: schedule, WebhookBreakerFailures: 1000})
	a := p.CreateApp("host")
	rcv := harness.NewReceiver(t)
	rcv.Secret = a.WebhookSecret
	rcv.Script(500, 500, 500, 500, 500, 500)
	p.ConfigureWebhook(a, rcv.Srv.URL)
	body := harness.Encode(t, map[string]any{"appKey": a.Key, "thirdUserId": "t1", "deviceKey": "HOME_SPO2_RING", "measureMode": "SPO2"})
	if res := p.Send(a.RequestH("POST", "/sandbox/mock/measure", body, harness.FreshNonce(), time.Now())); res.Status != 200 {
		t.Fatalf("mock: %d", res.Status)
	}
	first := rcv.WaitFor(6)[0]
	v := p.WaitDelivery(first.ID, "dead_letter")
	if v.Attempts != 6 {
		t.Fatalf("dead letter after %d attempts", v.Attempts)
	}
	var list struct {
		Deliveries []harness.DeliveryView `json:"deliveries"`
	}
	a.Expect("GET", "/open/v1/webhooks/deliveries?status=dead_letter", nil, http.StatusOK, "0").Data(t, &list)
	if len(list.Deliveries) != 1 || list.Deliveries[0].DeliveryID != first.ID {
		t.Fatalf("dead-letter list %+v", list)
	}
}
