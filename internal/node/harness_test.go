package node_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/internal/openapi/openapitest"
)

// platform is one node served over real HTTP, with a client whose every
// response is validated against the OpenAPI document.
type platform struct {
	t      testing.TB
	node   *node.Node
	srv    *httptest.Server
	client *http.Client
	cfg    node.Config
}

// readModels runs a test once per read-model store.
func readModels(t *testing.T, test func(t *testing.T, cfg node.Config)) {
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		test(t, node.Config{DataDir: t.TempDir()})
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		test(t, node.Config{DataDir: t.TempDir(), PostgresURL: nodeDB(t)})
	})
}

// quietLogger discards logs unless PLATFORM_TEST_LOGS=1 asks to see them.
func quietLogger() *slog.Logger {
	if os.Getenv("PLATFORM_TEST_LOGS") == "1" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func start(t testing.TB, cfg node.Config) *platform {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	n, err := node.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &platform{t: t, node: n, srv: httptest.NewServer(n.Handler), cfg: cfg}
	p.client = &http.Client{Transport: openapitest.NewTransport(t, http.DefaultTransport), Timeout: 30 * time.Second}
	t.Cleanup(p.stop)
	return p
}

func (p *platform) stop() {
	if p.srv != nil {
		p.srv.Close()
		p.srv = nil
	}
	if p.node != nil {
		if err := p.node.Close(); err != nil {
			p.t.Errorf("close node: %v", err)
		}
		p.node = nil
	}
}

// response is what a partner observes.
type response struct {
	Status int
	Header http.Header
	Raw    []byte
	Env    struct {
		Success   bool                `json:"success"`
		Code      any                 `json:"code"`
		Message   string              `json:"message"`
		Data      json.RawMessage     `json:"data"`
		Errors    map[string][]string `json:"errors"`
		Timestamp string              `json:"timestamp"`
	}
}

// code returns the envelope's code as text ("0" on success).
func (r response) code() string { return fmt.Sprint(r.Env.Code) }

func (r response) data(t testing.TB, into any) {
	t.Helper()
	if err := json.Unmarshal(r.Env.Data, into); err != nil {
		t.Fatalf("data %s: %v", r.Env.Data, err)
	}
}

func (p *platform) send(req *http.Request) response {
	p.t.Helper()
	res, err := p.client.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		p.t.Fatal(err)
	}
	out := response{Status: res.StatusCode, Header: res.Header, Raw: raw}
	if res.Header.Get("X-Request-Id") == "" {
		p.t.Errorf("%s %s: no X-Request-Id header", req.Method, req.URL.Path)
	}
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		if err := json.Unmarshal(raw, &out.Env); err != nil {
			p.t.Fatalf("%s %s: body %s: %v", req.Method, req.URL.Path, raw, err)
		}
	}
	return out
}

func encode(t testing.TB, body any) []byte {
	t.Helper()
	switch b := body.(type) {
	case nil:
		return nil
	case []byte:
		return b
	case string:
		return []byte(b)
	}
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func (p *platform) admin(method, path string, body any) response {
	p.t.Helper()
	req, err := http.NewRequest(method, p.srv.URL+path, bytes.NewReader(encode(p.t, body)))
	if err != nil {
		p.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.node.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	return p.send(req)
}

// app is a partner application's credentials.
type app struct {
	p             *platform
	ID            int64  `json:"app_id"`
	Key           string `json:"app_key"`
	Secret        string `json:"app_secret"`
	WebhookSecret string `json:"webhook_secret"`
}

// allScopes lets route tests use every partner route; permission tests
// create apps with createAppWith.
var allScopes = []string{"channel_users", "orders", "health_reports", "daily_report", "webhooks", "benefits", "plugin"}

// signedRoutes remembers the route of each scheme M signature the tests
// made (a signature covers its app's key and secret, so one map serves
// every app): scheme M binds an accepted signature to its method and path
// for its window, and every bodyless request of one second has one
// signature, so a client must not reuse a timestamp for another route (see
// the README, "Scheme M").
var signedRoutes = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

func (p *platform) createApp(name string) *app {
	p.t.Helper()
	return p.createAppWith(map[string]any{"name": name, "scopes": allScopes})
}

// createAppWith creates an app from an operator's creation body.
func (p *platform) createAppWith(body map[string]any) *app {
	p.t.Helper()
	res := p.admin("POST", "/admin/v1/apps", body)
	if res.Status != http.StatusCreated {
		p.t.Fatalf("create app: %d %s", res.Status, res.Raw)
	}
	a := &app{p: p}
	res.data(p.t, a)
	return a
}

// request builds a scheme M request signed with the app's credentials at time now.
func (a *app) request(method, path string, body any, now time.Time) *http.Request {
	a.p.t.Helper()
	raw := encode(a.p.t, body)
	req, err := http.NewRequest(method, a.p.srv.URL+path, bytes.NewReader(raw))
	if err != nil {
		a.p.t.Fatal(err)
	}
	ts, sig := a.stamp(method+" "+path, raw, now)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-App-Id", strconv.FormatInt(a.ID, 10))
	req.Header.Set("X-Timestamp", ts)
	req.Header.Set("X-Signature", sig)
	return req
}

// stamp signs at now's second unless this client already used that
// signature for another route, or for any write: then it takes the nearest
// free second, towards the present first. The server accepts a signature on
// another route only within auth.BindingGrace of its first use, and answers
// a write's signature seen before from its record (an identical replay), so
// a test's intentionally repeated write needs a signature of its own.
func (a *app) stamp(route string, body []byte, now time.Time) (ts, sig string) {
	signedRoutes.Lock()
	defer signedRoutes.Unlock()
	toward := int64(-1)
	if now.Before(time.Now()) {
		toward = 1
	}
	for i := int64(0); i < 500; i++ {
		step := (i + 1) / 2 * toward
		if i%2 == 0 {
			step = -step
		}
		ts = strconv.FormatInt(now.Unix()+step, 10)
		sig = signM(a.Key, ts, a.Secret, body)
		if r, used := signedRoutes.m[sig]; !used || (r == route && strings.HasPrefix(route, "GET ")) {
			signedRoutes.m[sig] = route
			return ts, sig
		}
	}
	a.p.t.Fatalf("no free timestamp near %v for %s", now, route)
	return "", ""
}

// signM is the test's own implementation of scheme M, independent of the server's.
func signM(key, ts, secret string, body []byte) string {
	return fmt.Sprintf("%x", md5.Sum([]byte(key+ts+secret+string(body))))
}

func (a *app) do(method, path string, body any) response {
	a.p.t.Helper()
	return a.p.send(a.request(method, path, body, time.Now()))
}

func (a *app) expect(method, path string, body any, status int, code string) response {
	a.p.t.Helper()
	res := a.do(method, path, body)
	if res.Status != status || res.code() != code {
		a.p.t.Fatalf("%s %s: got %d %s, want %d %s; body %s", method, path, res.Status, res.code(), status, code, res.Raw)
	}
	return res
}

// eventCount counts the events in the log that requests caused, to prove
// failures append nothing; deliveries, which the dispatcher derives
// asynchronously from earlier events, are left out.
func (p *platform) eventCount() int {
	p.t.Helper()
	n := 0
	var pos events.Position
	for {
		recs, err := p.node.Events.ReadAll(context.Background(), pos, 1000)
		if err != nil {
			p.t.Fatal(err)
		}
		if len(recs) == 0 {
			return n
		}
		for _, r := range recs {
			if !strings.HasPrefix(r.Stream, "delivery-") {
				n++
			}
		}
		pos = recs[len(recs)-1].Position
	}
}
