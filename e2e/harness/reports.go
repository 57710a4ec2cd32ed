package harness

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
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

func FreshNonce() string {
	nonceSeq.Lock()
	defer nonceSeq.Unlock()
	nonceSeq.n++
	return fmt.Sprintf("n-%d-%d", time.Now().UnixNano(), nonceSeq.n)
}

// RequestH builds a scheme H request; nonce "" omits X-Nonce.
func (a *App) RequestH(method, uri string, body []byte, nonce string, now time.Time) *http.Request {
	a.P.T.Helper()
	req, err := http.NewRequest(method, a.P.Srv.URL+uri, bytes.NewReader(body))
	if err != nil {
		a.P.T.Fatal(err)
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

func (a *App) Pull(id int64) Response {
	a.P.T.Helper()
	return a.P.Send(a.RequestH("GET", fmt.Sprintf("/open/v1/health-reports/%d", id), nil, FreshNonce(), time.Now()))
}

func (p *Platform) Uploader(name string) string {
	p.T.Helper()
	res := p.Admin("POST", "/admin/v1/uploaders", map[string]any{"name": name})
	if res.Status != http.StatusCreated {
		p.T.Fatalf("uploader: %d %s", res.Status, res.Raw)
	}
	var u struct {
		Token string `json:"token"`
	}
	res.Data(p.T, &u)
	return u.Token
}

func (p *Platform) Ingest(token, method, path string, body []byte) Response {
	p.T.Helper()
	req, _ := http.NewRequest(method, p.Srv.URL+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	return p.Send(req)
}

// awkwardRaw is raw_data as a vendor might send it: odd key order, spacing,
// numbers beyond float64, escapes, unknown keys, and a waveform to drop.
const awkwardRaw = `{"z_last":1,  "data_source":"station","indicators":[{"code":"heart_rate","value":72,"unit":"bpm"},
 {"indicator_code":"SPO2","values":[{"key":"spo2","value":97.5,"unit":"%"}]}],
 "big":123456789012345678901234567890.123456789,"esc":"\u00e9\u4e2d <tag> & \"q\"",
 "report":{"report_type":"BLOOD_PRESSURE","raw_data":{"ecg":{"dat_base64":"QUJD","rate":500},"vendor_new_field":[1,2,{"x":null}]}},
 "dat_base64":"WFla","a_first":{"nested":true}}`

const AwkwardStripped = `{"z_last":1,  "data_source":"station","indicators":[{"code":"heart_rate","value":72,"unit":"bpm"},
 {"indicator_code":"SPO2","values":[{"key":"spo2","value":97.5,"unit":"%"}]}],
 "big":123456789012345678901234567890.123456789,"esc":"\u00e9\u4e2d <tag> & \"q\"",
 "report":{"report_type":"BLOOD_PRESSURE","raw_data":{"ecg":{"rate":500},"vendor_new_field":[1,2,{"x":null}]}},
 "a_first":{"nested":true}}`

func ReportBody(openUserID int64, extra string) []byte {
	return []byte(fmt.Sprintf(`{"open_user_id":%d,"report_type":"BLOOD_PRESSURE","measurement_no":"M-1","device_sn":"SN9",
"interpretation_result":"normal","interpretation_method":"ai","interpretation_detail":{"risk_level":"low"},
"examined_at":"2026-11-20T09:30:00+08:00","meta":{"points_code":"P001","data_source":"station","operator_name":"Nurse Wu","operator_platform_user_id":77}%s,
"raw_data":%s}`, openUserID, extra, awkwardRaw))
}

func (p *Platform) OAuth(path string, form url.Values, user, pass string) (int, map[string]any) {
	p.T.Helper()
	req, _ := http.NewRequest("POST", p.Srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	res := p.Send(req)
	var out map[string]any
	_ = json.Unmarshal(res.Raw, &out)
	return res.Status, out
}

// LaunchSign is the test's own launch signature, straight from the spec.
func LaunchSign(secret, appKey, third, ts, nonce string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(appKey + "|" + third + "|" + ts + "|" + nonce))
	return hex.EncodeToString(m.Sum(nil))
}

func (p *Platform) Plugin(path string, body any) Response {
	p.T.Helper()
	req, _ := http.NewRequest("POST", p.Srv.URL+path, bytes.NewReader(Encode(p.T, body)))
	return p.Send(req)
}
