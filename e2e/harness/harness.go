package harness

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

// Platform is one node served over real HTTP, with a client whose every
// response is validated against the OpenAPI document.
type Platform struct {
	T      testing.TB
	Node   *node.Node
	Srv    *httptest.Server
	Client *http.Client
	Cfg    node.Config
}

// ReadModels runs a test once per read-model store.
func ReadModels(t *testing.T, test func(t *testing.T, cfg node.Config)) {
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		test(t, node.Config{DataDir: t.TempDir()})
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		test(t, node.Config{DataDir: t.TempDir(), PostgresURL: NodeDB(t)})
	})
}

// QuietLogger discards logs unless PLATFORM_TEST_LOGS=1 asks to see them.
func QuietLogger() *slog.Logger {
	if os.Getenv("PLATFORM_TEST_LOGS") == "1" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func Start(t testing.TB, cfg node.Config) *Platform {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = QuietLogger()
	}
	ctx, cancel := context.WithTimeout(context.Background(), WaitBound)
	defer cancel()
	n, err := node.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &Platform{T: t, Node: n, Srv: httptest.NewServer(n.Handler), Cfg: cfg}
	p.Client = &http.Client{Transport: openapitest.NewTransport(t, http.DefaultTransport), Timeout: 30 * time.Second}
	t.Cleanup(p.Stop)
	return p
}

func (p *Platform) Stop() {
	if p.Node != nil {
		p.Node.Drain() // as the platform's server does when it shuts down
	}
	if p.Srv != nil {
		p.Srv.Close()
		p.Srv = nil
	}
	if p.Node != nil {
		if err := p.Node.Close(); err != nil {
			p.T.Errorf("close node: %v", err)
		}
		p.Node = nil
	}
}

// Response is what a partner observes.
type Response struct {
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

// Code returns the envelope's code as text ("0" on success).
func (r Response) Code() string { return fmt.Sprint(r.Env.Code) }

func (r Response) Data(t testing.TB, into any) {
	t.Helper()
	if err := json.Unmarshal(r.Env.Data, into); err != nil {
		t.Fatalf("data %s: %v", r.Env.Data, err)
	}
}

func (p *Platform) Send(req *http.Request) Response {
	p.T.Helper()
	res, err := p.Client.Do(req)
	if err != nil {
		p.T.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		p.T.Fatal(err)
	}
	out := Response{Status: res.StatusCode, Header: res.Header, Raw: raw}
	if res.Header.Get("X-Request-Id") == "" {
		p.T.Errorf("%s %s: no X-Request-Id header", req.Method, req.URL.Path)
	}
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		if err := json.Unmarshal(raw, &out.Env); err != nil {
			p.T.Fatalf("%s %s: body %s: %v", req.Method, req.URL.Path, raw, err)
		}
	}
	return out
}

func Encode(t testing.TB, body any) []byte {
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

func (p *Platform) Admin(method, path string, body any) Response {
	p.T.Helper()
	req, err := http.NewRequest(method, p.Srv.URL+path, bytes.NewReader(Encode(p.T, body)))
	if err != nil {
		p.T.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.Node.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	return p.Send(req)
}

// App is a partner application's credentials.
type App struct {
	P             *Platform
	ID            int64  `json:"app_id"`
	Key           string `json:"app_key"`
	Secret        string `json:"app_secret"`
	WebhookSecret string `json:"webhook_secret"`
}

// AllScopes lets route tests use every partner route; permission tests
// create apps with CreateAppWith.
var AllScopes = []string{"channel_users", "orders", "health_reports", "daily_report", "webhooks", "benefits", "plugin"}

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

func (p *Platform) CreateApp(name string) *App {
	p.T.Helper()
	return p.CreateAppWith(map[string]any{"name": name, "scopes": AllScopes})
}

// CreateAppWith creates an app from an operator's creation body.
func (p *Platform) CreateAppWith(body map[string]any) *App {
	p.T.Helper()
	res := p.Admin("POST", "/admin/v1/apps", body)
	if res.Status != http.StatusCreated {
		p.T.Fatalf("create app: %d %s", res.Status, res.Raw)
	}
	a := &App{P: p}
	res.Data(p.T, a)
	return a
}

// Request builds a scheme M request signed with the app's credentials at time now.
func (a *App) Request(method, path string, body any, now time.Time) *http.Request {
	a.P.T.Helper()
	raw := Encode(a.P.T, body)
	req, err := http.NewRequest(method, a.P.Srv.URL+path, bytes.NewReader(raw))
	if err != nil {
		a.P.T.Fatal(err)
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
func (a *App) stamp(route string, body []byte, now time.Time) (ts, sig string) {
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
		sig = SignM(a.Key, ts, a.Secret, body)
		if r, used := signedRoutes.m[sig]; !used || (r == route && strings.HasPrefix(route, "GET ")) {
			signedRoutes.m[sig] = route
			return ts, sig
		}
	}
	a.P.T.Fatalf("no free timestamp near %v for %s", now, route)
	return "", ""
}

// SignM is the test's own implementation of scheme M, independent of the server's.
func SignM(key, ts, secret string, body []byte) string {
	return fmt.Sprintf("%x", md5.Sum([]byte(key+ts+secret+string(body))))
}

func (a *App) Do(method, path string, body any) Response {
	a.P.T.Helper()
	return a.P.Send(a.Request(method, path, body, time.Now()))
}

func (a *App) Expect(method, path string, body any, status int, code string) Response {
	a.P.T.Helper()
	res := a.Do(method, path, body)
	if res.Status != status || res.Code() != code {
		a.P.T.Fatalf("%s %s: got %d %s, want %d %s; body %s", method, path, res.Status, res.Code(), status, code, res.Raw)
	}
	return res
}

// EventCount counts the events in the log that requests caused,
// idempotency records included, to prove failures and replays append
// nothing; deliveries, which the dispatcher derives asynchronously from
// earlier events, are left out.
func (p *Platform) EventCount() int {
	p.T.Helper()
	n := 0
	var pos events.Position
	for {
		recs, err := p.Node.Events.ReadAll(context.Background(), pos, 1000)
		if err != nil {
			p.T.Fatal(err)
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
