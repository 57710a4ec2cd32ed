package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const testToken = "adm_test_token"

func TestMain(m *testing.M) {
	followPoll = 5 * time.Millisecond
	rebuildPoll = 5 * time.Millisecond
	os.Exit(m.Run())
}

// request is what the fake server saw of one call.
type request struct {
	Method, Path, Auth string
	Query              map[string][]string
	Body               map[string]any
}

// fakeServer serves canned envelopes and records every request.
type fakeServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []request
}

// newServer starts a fake admin API; handle answers each recorded request.
func newServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) *fakeServer {
	t.Helper()
	f := &fakeServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := request{Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Query: r.URL.Query()}
		if b, _ := io.ReadAll(r.Body); len(b) > 0 {
			if err := json.Unmarshal(b, &req.Body); err != nil {
				t.Errorf("request body is not a JSON object: %q", b)
			}
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, req)
		f.mu.Unlock()
		w.Header().Set("X-Request-Id", "req-1")
		handle(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.reqs...)
}

// ok writes a success envelope around data.
func ok(w http.ResponseWriter, status int, data any) {
	writeJSON(w, status, map[string]any{"success": true, "code": 0, "message": "ok", "data": data, "timestamp": "2025-01-02T03:04:05Z"})
}

// fail writes a failure envelope.
func fail(w http.ResponseWriter, status int, code, message string, fields map[string][]string) {
	env := map[string]any{"success": false, "code": code, "message": message, "timestamp": "2025-01-02T03:04:05Z"}
	if fields != nil {
		env["errors"] = fields
	}
	writeJSON(w, status, env)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// result is one CLI run.
type result struct {
	code           int
	stdout, stderr string
}

// environ is a fake process environment.
type environ map[string]string

func (e environ) get(name string) string { return e[name] }

// cliEnv points the CLI at srv with the test token.
func cliEnv(srv *fakeServer) environ {
	return environ{"PLATFORM_URL": srv.URL, "PLATFORM_ADMIN_TOKEN": testToken}
}

func runCLI(env environ, args ...string) result {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut, env.get)
	return result{code, out.String(), errOut.String()}
}

func runCLIContext(ctx context.Context, env environ, args ...string) result {
	var out, errOut bytes.Buffer
	code := runContext(ctx, args, &out, &errOut, env.get)
	return result{code, out.String(), errOut.String()}
}

func wantCode(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
}

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s does not contain %q:\n%s", what, w, got)
		}
	}
}

func TestUsage(t *testing.T) {
	commands := []string{"apps create", "apps list", "apps show", "apps rotate-secret", "history", "events", "projections", "rebuild", "help",
		"--server", "--token", "--data-dir", "--json", "--webhook-event", "--follow", "--timeout"}

	r := runCLI(environ{})
	wantCode(t, r, 2)
	wantContains(t, "stderr", r.stderr, append([]string{"platformctl: no command given", "Usage: platformctl"}, commands...)...)
	if r.stdout != "" {
		t.Errorf("stdout = %q, want nothing", r.stdout)
	}

	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}, {"apps", "list", "-h"}} {
		r := runCLI(environ{}, args...)
		wantCode(t, r, 0)
		wantContains(t, "stdout of "+strings.Join(args, " "), r.stdout, commands...)
	}

	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"apps"}, "apps needs a subcommand"},
		{[]string{"apps", "delete"}, `unknown apps subcommand "delete"`},
		{[]string{"apps", "create"}, "apps create needs --name"},
		{[]string{"apps", "create", "--name", "x", "--environment", "staging"}, "--environment must be sandbox or production"},
		{[]string{"apps", "create", "--name", "x", "extra"}, "apps create takes no arguments"},
		{[]string{"apps", "list", "extra"}, "apps list takes no arguments"},
		{[]string{"apps", "show"}, "apps show needs exactly one APP_ID"},
		{[]string{"apps", "show", "1", "2"}, "apps show needs exactly one APP_ID"},
		{[]string{"apps", "show", "abc"}, "APP_ID must be a positive integer"},
		{[]string{"apps", "rotate-secret", "0"}, "APP_ID must be a positive integer"},
		{[]string{"history"}, "history needs exactly one STREAM"},
		{[]string{"history", "app-1", "--limit", "-1"}, "invalid value"},
		{[]string{"events", "x"}, "events takes no arguments"},
		{[]string{"events", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"projections", "x"}, "projections takes no arguments"},
		{[]string{"rebuild"}, "rebuild needs exactly one projection NAME"},
		{[]string{"rebuild", "apps", "--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"--nope", "apps", "list"}, "flag provided but not defined: -nope"},
	} {
		r := runCLI(environ{}, tc.args...)
		wantCode(t, r, 2)
		wantContains(t, "stderr of "+strings.Join(tc.args, " "), r.stderr, "platformctl: ", tc.msg, "Usage: platformctl", "apps rotate-secret")
	}
}

func TestTokenAndServerResolution(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { ok(w, 200, map[string]any{"apps": []any{}}) })
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "admin.token"), []byte("adm_from_file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := newServer(t, func(w http.ResponseWriter, r *http.Request) { ok(w, 200, map[string]any{"apps": []any{}}) })

	for _, tc := range []struct {
		name string
		env  environ
		args []string
		auth string
	}{
		{"env token", environ{"PLATFORM_URL": srv.URL, "PLATFORM_ADMIN_TOKEN": "adm_env"}, nil, "Bearer adm_env"},
		{"flag beats env", environ{"PLATFORM_URL": srv.URL, "PLATFORM_ADMIN_TOKEN": "adm_env"}, []string{"--token", "adm_flag"}, "Bearer adm_flag"},
		{"env data dir", environ{"PLATFORM_URL": srv.URL, "PLATFORM_DATA_DIR": dir}, nil, "Bearer adm_from_file"},
		{"flag data dir", environ{"PLATFORM_URL": srv.URL, "PLATFORM_DATA_DIR": "/nonexistent"}, []string{"--data-dir", dir}, "Bearer adm_from_file"},
		{"server flag, trailing slash", environ{"PLATFORM_URL": other.URL, "PLATFORM_ADMIN_TOKEN": "adm_env"}, []string{"--server", srv.URL + "/"}, "Bearer adm_env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(srv.requests())
			r := runCLI(tc.env, append(tc.args, "apps", "list")...)
			wantCode(t, r, 0)
			reqs := srv.requests()
			if len(reqs) != before+1 {
				t.Fatalf("server saw %d requests, want 1", len(reqs)-before)
			}
			if got := reqs[len(reqs)-1]; got.Auth != tc.auth || got.Path != "/admin/v1/apps" {
				t.Errorf("request %+v, want path /admin/v1/apps and Authorization %q", got, tc.auth)
			}
		})
	}
	// Global flags also work after the command.
	r := runCLI(environ{"PLATFORM_URL": "http://127.0.0.1:1"}, "apps", "list", "--server", srv.URL, "--token", "adm_after")
	wantCode(t, r, 0)
	if reqs := srv.requests(); reqs[len(reqs)-1].Auth != "Bearer adm_after" {
		t.Errorf("Authorization %q, want Bearer adm_after", reqs[len(reqs)-1].Auth)
	}
	if len(other.requests()) != 0 {
		t.Errorf("the PLATFORM_URL server was called although --server was given")
	}

	r = runCLI(environ{"PLATFORM_URL": srv.URL, "PLATFORM_DATA_DIR": t.TempDir()}, "apps", "list")
	wantCode(t, r, 1)
	wantContains(t, "stderr", r.stderr, "error: no admin token", "PLATFORM_ADMIN_TOKEN", "admin.token")

	r = runCLI(environ{"PLATFORM_URL": "ftp://x", "PLATFORM_ADMIN_TOKEN": "t"}, "apps", "list")
	wantCode(t, r, 1)
	wantContains(t, "stderr", r.stderr, `error: server "ftp://x" is not an http(s) URL`)
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		handle func(w http.ResponseWriter, r *http.Request)
		want   []string
	}{
		{"unauthorized", func(w http.ResponseWriter, r *http.Request) {
			fail(w, 401, "HTTP_401", "admin token missing or wrong", nil)
		}, []string{"error: HTTP_401: admin token missing or wrong\n", "http status 401, request id req-1\n"}},
		{"internal", func(w http.ResponseWriter, r *http.Request) {
			fail(w, 500, "HTTP_500", "internal error; the request id identifies it in our logs", nil)
		}, []string{"error: HTTP_500: internal error; the request id identifies it in our logs\n", "request id req-1"}},
		{"not an envelope", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(502)
			_, _ = io.WriteString(w, "<html>\n<body>Bad Gateway</body></html>")
		}, []string{"error: HTTP_502: response is not a platform envelope: <html> <body>Bad Gateway</body></html>\n", "http status 502"}},
		{"success false with 200", func(w http.ResponseWriter, r *http.Request) {
			fail(w, 200, "SOMETHING", "odd", nil)
		}, []string{"error: SOMETHING: odd\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.handle)
			r := runCLI(cliEnv(srv), "projections")
			wantCode(t, r, 1)
			wantContains(t, "stderr", r.stderr, tc.want...)
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}

	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {})
	srv.Close()
	r := runCLI(cliEnv(srv), "projections")
	wantCode(t, r, 1)
	wantContains(t, "stderr", r.stderr, "error: GET /admin/v1/projections: ")
}

func TestInterrupted(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	r := runCLIContext(ctx, cliEnv(srv), "projections")
	wantCode(t, r, 130)
	wantContains(t, "stderr", r.stderr, "platformctl: interrupted")
}
