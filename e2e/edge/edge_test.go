package edge_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/internal/openapi/openapitest"
)

func startLogged(t *testing.T) (*harness.Platform, *harness.SyncBuffer) {
	t.Helper()
	logs := &harness.SyncBuffer{}
	return harness.Start(t, node.Config{DataDir: t.TempDir(), Logger: slog.New(slog.NewJSONHandler(logs, nil))}), logs
}

// writeFirst is a client that writes the whole request, body included,
// before it reads a byte of the answer (as Python's urllib does), on a
// fresh connection each time. Its send buffer is small, as on a real
// network, so the body cannot hide in the kernel while the server ignores it.
type writeFirst struct{ addr string }

func (c writeFirst) RoundTrip(req *http.Request) (*http.Response, error) {
	conn, err := net.Dial("tcp", c.addr)
	if err != nil {
		return nil, err
	}
	_ = conn.(*net.TCPConn).SetWriteBuffer(64 << 10)
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, err
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		conn.Close()
		return nil, err
	}
	raw, err := io.ReadAll(res.Body)
	conn.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(raw))
	return res, nil
}

// smallReadBuffers gives accepted connections a small receive buffer, so
// that unread request bytes stay unread instead of filling loopback's
// large buffers.
type smallReadBuffers struct{ net.Listener }

func (l smallReadBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(64 << 10)
	}
	return c, err
}

// Defect 5: a client that sends a 2 MiB body before reading gets the 413
// envelope every time, not a connection reset.
func TestOversizedBodyAnswers413ToClientsThatWriteFirst(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir()})
	a := p.CreateApp("big")
	srv := httptest.NewUnstartedServer(p.Node.Handler)
	srv.Listener = smallReadBuffers{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: openapitest.NewTransport(t, writeFirst{addr: srv.Listener.Addr().String()})}
	body := bytes.Repeat([]byte("x"), 2<<20)
	for i := range 20 {
		req := a.Request("POST", "/open/v1/channel/users", body, time.Now())
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("attempt %d: %v", i, err)
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var env struct {
			Success bool   `json:"success"`
			Code    string `json:"code"`
		}
		if err := json.Unmarshal(raw, &env); err != nil {
			t.Fatalf("attempt %d: %d %q: %v", i, res.StatusCode, raw, err)
		}
		if res.StatusCode != http.StatusRequestEntityTooLarge || env.Success || env.Code != "PAYLOAD_TOO_LARGE" {
			t.Fatalf("attempt %d: %d %s", i, res.StatusCode, raw)
		}
		if !res.Close {
			t.Errorf("attempt %d: no Connection: close", i)
		}
	}
	// The same holds without a Content-Length (chunked), where the limit is
	// found only after 1 MiB was read.
	for i := range 5 {
		req := a.Request("POST", "/open/v1/channel/users", nil, time.Now())
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), -1
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("chunked attempt %d: %v", i, err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("chunked attempt %d: %d", i, res.StatusCode)
		}
	}
}

// Observability: whatever method strings clients invent, the request
// histogram keeps one "OTHER" label value, and over-long request lines are
// refused with 414 before the access log could echo them.
func TestMethodLabelsStayBoundedAndLongRequestLinesAreRefused(t *testing.T) {
	t.Parallel()
	p, logs := startLogged(t)
	plain := &http.Client{Timeout: 30 * time.Second}
	letters := "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	randomMethod := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = letters[rand.IntN(len(letters))]
		}
		return string(b)
	}
	do := func(method, path string) (int, string) {
		req, err := http.NewRequest(method, p.Srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := plain.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		var env struct {
			Code string `json:"code"`
		}
		_ = json.Unmarshal(raw, &env)
		return res.StatusCode, env.Code
	}
	for range 200 {
		if status, _ := do(randomMethod(1+rand.IntN(2000)), "/open/v1/channel/users"); status != http.StatusMethodNotAllowed {
			t.Fatalf("random method: %d, want 405", status)
		}
	}
	long := randomMethod(50_000)
	for range 5 {
		if status, code := do(long, "/open/v1/channel/users"); status != http.StatusRequestURITooLong || code != "URI_TOO_LONG" {
			t.Fatalf("50 KB method: %d %s, want 414 URI_TOO_LONG", status, code)
		}
	}
	if status, code := do("GET", "/open/v1/channel/users/1?q="+strings.Repeat("a", 20_000)); status != http.StatusRequestURITooLong || code != "URI_TOO_LONG" {
		t.Fatalf("20 KB URI: %d %s, want 414 URI_TOO_LONG", status, code)
	}

	families, err := p.Node.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := 0
	for _, f := range families {
		if f.GetName() != "platform_http_request_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			series++
			for _, l := range m.GetLabel() {
				if l.GetName() == "method" && l.GetValue() != "OTHER" && l.GetValue() != "GET" {
					t.Errorf("method label %.40q", l.GetValue())
				}
			}
		}
	}
	// OTHER × {unmatched 405, refused 414} and GET × refused 414.
	if series > 3 {
		t.Errorf("%d request-duration series after 200 random methods, want at most 3", series)
	}
	if out := logs.String(); strings.Contains(out, long[:1000]) || strings.Contains(out, strings.Repeat("a", 1000)) {
		t.Errorf("the access log echoes an over-long request line")
	}
	for _, l := range logs.AccessLines(t) {
		if m, _ := l["method"].(string); m != "OTHER" && m != "GET" {
			t.Errorf("access log method %.40q", m)
		}
	}
}

// Observability: a refused signature answers the same HTTP_401 whatever
// went wrong; the access log says what (and which app) for support, and
// never logs the signature or the secret.
func TestAccessLogCarriesAppCodeAndAuthFailureReason(t *testing.T) {
	t.Parallel()
	p, logs := startLogged(t)
	a := p.CreateApp("logged")
	stale := a.Request("GET", "/open/v1/webhooks/events", nil, time.Now().Add(-10*time.Minute))
	badSig := a.Request("GET", "/open/v1/webhooks/events", nil, time.Now())
	badSig.Header.Set("X-Signature", strings.Repeat("0", 32))
	unknown := a.Request("GET", "/open/v1/webhooks/events", nil, time.Now())
	unknown.Header.Set("X-App-Id", "999999")
	missing := a.Request("GET", "/open/v1/webhooks/events", nil, time.Now())
	missing.Header.Del("X-Timestamp")
	var sigs []string
	var first harness.Response
	for i, req := range []*http.Request{stale, badSig, unknown, missing} {
		sigs = append(sigs, req.Header.Get("X-Signature"))
		res := p.Send(req)
		if res.Status != http.StatusUnauthorized || res.Code() != "HTTP_401" {
			t.Fatalf("request %d: %d %s", i, res.Status, res.Raw)
		}
		if i == 0 {
			first = res
		} else if res.Env.Message != first.Env.Message || res.Env.Success || res.Env.Data != nil || res.Env.Errors != nil {
			t.Errorf("request %d answered %s, request 0 %s: the answer must not tell failures apart", i, res.Raw, first.Raw)
		}
	}
	a.Expect("GET", "/open/v1/webhooks/events", nil, http.StatusOK, "0")

	var got []map[string]any
	for _, l := range logs.AccessLines(t) {
		if l["route"] == "/open/v1/webhooks/events" {
			got = append(got, l)
		}
	}
	if len(got) != 5 {
		t.Fatalf("%d access log lines for the route, want 5", len(got))
	}
	want := []struct {
		appID  float64
		reason string
	}{{float64(a.ID), "expired_timestamp"}, {float64(a.ID), "bad_signature"}, {999999, "unknown_app"}, {float64(a.ID), "missing_timestamp"}}
	for i, w := range want {
		l := got[i]
		if l["auth_failure"] != w.reason || l["app_id"] != w.appID || l["code"] != "HTTP_401" || l["status"] != float64(401) {
			t.Errorf("line %d: %v, want app_id %v, code HTTP_401, auth_failure %s", i, l, w.appID, w.reason)
		}
	}
	if ok := got[4]; ok["app_id"] != float64(a.ID) || ok["status"] != float64(200) || ok["auth_failure"] != nil {
		t.Errorf("success line: %v", ok)
	}
	out := logs.String()
	for _, secret := range append(sigs, a.Secret, a.WebhookSecret, p.Node.AdminToken) {
		if secret != "" && strings.Contains(out, secret) {
			t.Errorf("the log contains a secret or signature %q", secret)
		}
	}
}

// clientFrom is a validating client whose connections come from the
// loopback address ip (Linux answers on all of 127.0.0.0/8).
func clientFrom(t *testing.T, ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	base := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}}
	t.Cleanup(base.CloseIdleConnections)
	return &http.Client{Transport: openapitest.NewTransport(t, base), Timeout: 30 * time.Second}
}

// Defect 10: failed signatures from one address are throttled with
// HTTP_429 and Retry-After after a burst, while the same app's correctly
// signed requests from another address go through: an attacker cannot
// lock the partner out.
func TestFailedAuthenticationIsThrottledPerAddressWithoutLockingThePartnerOut(t *testing.T) {
	t.Parallel()
	// The node's clock stands still, so the failure budget cannot refill
	// (one failure per 3 s) however slowly a loaded machine sends the 100
	// requests; signatures still carry the real time, well within the window.
	frozen := time.Now()
	p := harness.Start(t, node.Config{DataDir: t.TempDir(), Now: func() time.Time { return frozen }})
	a := p.CreateApp("victim")
	attacker, partner := clientFrom(t, "127.0.0.1"), clientFrom(t, "127.0.0.2")
	do := func(c *http.Client, req *http.Request) harness.Response {
		t.Helper()
		p.Client, req.Host = c, ""
		return p.Send(req)
	}
	forged := func() *http.Request {
		req := a.Request("GET", "/open/v1/webhooks/events", nil, time.Now())
		req.Header.Set("X-Signature", strings.Repeat("f", 32))
		return req
	}
	var statuses []int
	for range 100 {
		res := do(attacker, forged())
		statuses = append(statuses, res.Status)
		if res.Status == http.StatusTooManyRequests {
			if res.Code() != "HTTP_429" || res.Env.Success {
				t.Fatalf("throttled answer %s", res.Raw)
			}
			if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || s < 1 {
				t.Fatalf("Retry-After %q", res.Header.Get("Retry-After"))
			}
		} else if res.Status != http.StatusUnauthorized {
			t.Fatalf("forged signature: %d %s", res.Status, res.Raw)
		}
	}
	limit := auth.DefaultAppAddressFailures
	for i, s := range statuses {
		if want := map[bool]int{true: 401, false: 429}[i < limit]; s != want {
			t.Fatalf("forged request %d: %d, want %d (statuses %v)", i, s, want, statuses)
		}
	}
	// The throttled address is refused before its signature is checked, so
	// a correct guess cannot be told from a wrong one...
	if res := do(attacker, a.Request("GET", "/open/v1/webhooks/events", nil, time.Now())); res.Status != http.StatusTooManyRequests {
		t.Fatalf("good signature from the throttled address: %d %s", res.Status, res.Raw)
	}
	// ...while the partner, elsewhere, is not locked out.
	for range 3 {
		if res := do(partner, a.Request("GET", "/open/v1/webhooks/events", nil, time.Now())); res.Status != http.StatusOK {
			t.Fatalf("partner from another address: %d %s", res.Status, res.Raw)
		}
	}
	// Requests that present no signature are refused but not counted: they
	// cannot guess anything.
	other := p.CreateApp("other")
	for range limit + 5 {
		req := other.Request("GET", "/open/v1/webhooks/events", nil, time.Now())
		req.Header.Del("X-Signature")
		if res := do(partner, req); res.Status != http.StatusUnauthorized {
			t.Fatalf("unsigned request: %d %s", res.Status, res.Raw)
		}
	}
	if res := do(partner, other.Request("GET", "/open/v1/webhooks/events", nil, time.Now())); res.Status != http.StatusOK {
		t.Fatalf("after unsigned requests: %d %s", res.Status, res.Raw)
	}
}
