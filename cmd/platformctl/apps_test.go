package main

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

var testApps = []map[string]any{
	{"app_id": 12, "name": "Acme Health", "app_key": "ak_12", "environment": "sandbox", "webhook_url": "https://acme.example/hook",
		"webhook_events": []string{"channel_user.registered"}, "created_at": "2025-01-02T03:04:05Z", "updated_at": "2025-01-03T03:04:05Z",
		"scopes": []string{"orders", "webhooks"}, "suspended": true, "suspension_reason": "unpaid", "webhook_secret_pending": true},
	{"app_id": 13, "name": "Beta", "app_key": "ak_13", "environment": "production", "webhook_url": "",
		"webhook_events": []string{}, "created_at": "2025-01-02T03:04:05Z", "updated_at": "2025-01-02T03:04:05Z"},
}

func appsServer(t *testing.T) *fakeServer {
	return newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.Method + " " + r.URL.Path {
		case "POST /admin/v1/apps":
			ok(w, 201, map[string]any{"app_id": 12, "app_key": "ak_12", "app_secret": "as_secret", "webhook_secret": "whs_secret", "environment": "production"})
		case "GET /admin/v1/apps":
			ok(w, 200, map[string]any{"apps": testApps})
		case "GET /admin/v1/apps/12":
			ok(w, 200, testApps[0])
		case "GET /admin/v1/apps/99", "POST /admin/v1/apps/99/rotate-secret":
			fail(w, 404, "APP_NOT_FOUND", "app not found", nil)
		case "POST /admin/v1/apps/12/rotate-secret":
			ok(w, 200, map[string]any{"app_id": 12, "app_secret": "as_rotated"})
		case "PUT /admin/v1/apps/12/scopes":
			ok(w, 200, map[string]any{"app_id": 12, "scopes": []string{"benefits", "orders"}})
		case "PUT /admin/v1/apps/12/authentication":
			ok(w, 200, map[string]any{"app_id": 12, "require_scheme_h": true})
		case "POST /admin/v1/apps/12/suspend", "POST /admin/v1/apps/12/resume":
			ok(w, 200, map[string]any{"app_id": 12, "suspended": strings.HasSuffix(r.URL.Path, "suspend")})
		case "POST /admin/v1/apps/12/webhook-secret/rotate":
			ok(w, 200, map[string]any{"app_id": 12, "pending_webhook_secret": "whsec_pending"})
		case "POST /admin/v1/apps/12/webhook-secret/activate":
			ok(w, 200, map[string]any{"app_id": 12, "activated": true})
		default:
			t.Errorf("unexpected %s %s", r.Method, r.URL)
			fail(w, 404, "NOT_FOUND", "no such route", nil)
		}
	})
}

func TestAppsCreate(t *testing.T) {
	srv := appsServer(t)
	r := runCLI(cliEnv(srv), "apps", "create", "--name", "Acme Health", "--webhook-url", "https://acme.example/hook",
		"--webhook-event", "channel_user.registered", "--webhook-event", "family_member.updated", "--environment", "production")
	wantCode(t, r, 0)
	want := "" +
		"app_id          12\n" +
		"app_key         ak_12\n" +
		"app_secret      as_secret\n" +
		"webhook_secret  whs_secret\n" +
		"environment     production\n"
	if r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	wantContains(t, "stderr", r.stderr, "secrets are shown only once")

	reqs := srv.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	got := reqs[0]
	if got.Method != "POST" || got.Path != "/admin/v1/apps" || got.Auth != "Bearer "+testToken {
		t.Errorf("request %s %s auth %q", got.Method, got.Path, got.Auth)
	}
	wantBody := map[string]any{"name": "Acme Health", "webhook_url": "https://acme.example/hook",
		"webhook_events": []any{"channel_user.registered", "family_member.updated"}, "environment": "production"}
	if !reflect.DeepEqual(got.Body, wantBody) {
		t.Errorf("body %v, want %v", got.Body, wantBody)
	}

	// Only --name: the optional fields are left to the server's defaults.
	r = runCLI(cliEnv(srv), "apps", "create", "--name", "Bare")
	wantCode(t, r, 0)
	if body := srv.requests()[1].Body; !reflect.DeepEqual(body, map[string]any{"name": "Bare"}) {
		t.Errorf("body %v, want only the name", body)
	}

	r = runCLI(cliEnv(srv), "--json", "apps", "create", "--name", "Bare")
	wantCode(t, r, 0)
	var creds map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &creds); err != nil || creds["app_secret"] != "as_secret" {
		t.Errorf("--json stdout %q is not the credentials (%v)", r.stdout, err)
	}
}

func TestAppsCreateValidationError(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		fail(w, 422, "VALIDATION_ERROR", "one or more fields are invalid", map[string][]string{
			"webhook_url":    {"must be an https URL", "must not point to a private address"},
			"name":           {"is too long"},
			"webhook_events": {"unknown event type"},
		})
	})
	r := runCLI(cliEnv(srv), "apps", "create", "--name", strings.Repeat("x", 300), "--webhook-url", "http://10.0.0.1/")
	wantCode(t, r, 1)
	want := "" +
		"error: VALIDATION_ERROR: one or more fields are invalid\n" +
		"  name: is too long\n" +
		"  webhook_events: unknown event type\n" +
		"  webhook_url: must be an https URL\n" +
		"  webhook_url: must not point to a private address\n" +
		"http status 422, request id req-1\n"
	if r.stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", r.stderr, want)
	}
	if r.stdout != "" {
		t.Errorf("stdout = %q, want nothing", r.stdout)
	}
}

func TestAppsList(t *testing.T) {
	srv := appsServer(t)
	r := runCLI(cliEnv(srv), "apps", "list")
	wantCode(t, r, 0)
	want := "" +
		"ID  NAME         ENVIRONMENT  APP_KEY  WEBHOOK_URL\n" +
		"12  Acme Health  sandbox      ak_12    https://acme.example/hook\n" +
		"13  Beta         production   ak_13    -\n"
	if r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	if got := srv.requests()[0]; got.Method != "GET" || got.Path != "/admin/v1/apps" || got.Auth != "Bearer "+testToken {
		t.Errorf("request %+v", got)
	}

	r = runCLI(cliEnv(srv), "apps", "list", "--json")
	wantCode(t, r, 0)
	var data struct {
		Apps []appView `json:"apps"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &data); err != nil || len(data.Apps) != 2 || data.Apps[1].Name != "Beta" {
		t.Errorf("--json stdout %q (%v)", r.stdout, err)
	}
}

func TestAppsShow(t *testing.T) {
	srv := appsServer(t)
	r := runCLI(cliEnv(srv), "apps", "show", "12")
	wantCode(t, r, 0)
	want := "" +
		"app_id                  12\n" +
		"name                    Acme Health\n" +
		"environment             sandbox\n" +
		"app_key                 ak_12\n" +
		"webhook_url             https://acme.example/hook\n" +
		"webhook_events          channel_user.registered\n" +
		"scopes                  orders,webhooks\n" +
		"suspended               true\n" +
		"suspension_reason       unpaid\n" +
		"require_scheme_h        false\n" +
		"webhook_secret_pending  true\n" +
		"created_at              2025-01-02T03:04:05Z\n" +
		"updated_at              2025-01-03T03:04:05Z\n"
	if r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	if got := srv.requests()[0]; got.Method != "GET" || got.Path != "/admin/v1/apps/12" {
		t.Errorf("request %+v", got)
	}

	r = runCLI(cliEnv(srv), "apps", "show", "99")
	wantCode(t, r, 1)
	wantContains(t, "stderr", r.stderr, "error: APP_NOT_FOUND: app not found\n")
}

func TestAppsRotateSecret(t *testing.T) {
	srv := appsServer(t)
	r := runCLI(cliEnv(srv), "apps", "rotate-secret", "12")
	wantCode(t, r, 0)
	want := "app_id      12\napp_secret  as_rotated\n"
	if r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	wantContains(t, "stderr", r.stderr, "shown only once")
	if got := srv.requests()[0]; got.Method != "POST" || got.Path != "/admin/v1/apps/12/rotate-secret" || got.Auth != "Bearer "+testToken || got.Body != nil {
		t.Errorf("request %+v", got)
	}

	r = runCLI(cliEnv(srv), "apps", "rotate-secret", "99")
	wantCode(t, r, 1)
	wantContains(t, "stderr", r.stderr, "error: APP_NOT_FOUND: app not found\n")
	if strings.Contains(r.stderr, "shown only once") {
		t.Errorf("failed rotation printed the secrets note")
	}
}

// The permission subcommands send what the operator API documents.
func TestAppsPermissions(t *testing.T) {
	srv := appsServer(t)
	wantCode(t, runCLI(cliEnv(srv), "apps", "create", "--name", "Least", "--scopes", "orders, benefits"), 0)
	wantCode(t, runCLI(cliEnv(srv), "apps", "scopes", "12", "orders,benefits"), 0)
	wantCode(t, runCLI(cliEnv(srv), "apps", "scopes", "12", "default"), 0)
	wantCode(t, runCLI(cliEnv(srv), "apps", "auth", "12", "scheme-h"), 0)
	wantCode(t, runCLI(cliEnv(srv), "apps", "auth", "12", "default"), 0)
	wantCode(t, runCLI(cliEnv(srv), "apps", "auth", "12", "scheme-m"), 2)
	wantCode(t, runCLI(cliEnv(srv), "apps", "auth", "12"), 2)
	wantCode(t, runCLI(cliEnv(srv), "apps", "suspend", "12", "--reason", "unpaid"), 0)
	wantCode(t, runCLI(cliEnv(srv), "apps", "resume", "12"), 0)
	r := runCLI(cliEnv(srv), "apps", "webhook-secret", "12", "rotate")
	wantCode(t, r, 0)
	wantContains(t, "stdout", r.stdout, "whsec_pending")
	wantContains(t, "stderr", r.stderr, "shown only once")
	wantCode(t, runCLI(cliEnv(srv), "apps", "webhook-secret", "12", "activate"), 0)
	wantCode(t, runCLI(cliEnv(srv), "apps", "webhook-secret", "12", "forget"), 2)
	wantCode(t, runCLI(cliEnv(srv), "apps", "scopes", "12"), 2)

	want := []struct {
		method, path string
		body         map[string]any
	}{
		{"POST", "/admin/v1/apps", map[string]any{"name": "Least", "scopes": []any{"orders", "benefits"}}},
		{"PUT", "/admin/v1/apps/12/scopes", map[string]any{"scopes": []any{"orders", "benefits"}}},
		{"PUT", "/admin/v1/apps/12/scopes", map[string]any{"scopes": []any{}}},
		{"PUT", "/admin/v1/apps/12/authentication", map[string]any{"require_scheme_h": true}},
		{"PUT", "/admin/v1/apps/12/authentication", map[string]any{"require_scheme_h": false}},
		{"POST", "/admin/v1/apps/12/suspend", map[string]any{"reason": "unpaid"}},
		{"POST", "/admin/v1/apps/12/resume", map[string]any{}},
		{"POST", "/admin/v1/apps/12/webhook-secret/rotate", map[string]any{}},
		{"POST", "/admin/v1/apps/12/webhook-secret/activate", map[string]any{}},
	}
	reqs := srv.requests()
	if len(reqs) != len(want) {
		t.Fatalf("%d requests, want %d", len(reqs), len(want))
	}
	for i, w := range want {
		if got := reqs[i]; got.Method != w.method || got.Path != w.path || (len(w.body) > 0 || len(got.Body) > 0) && !reflect.DeepEqual(got.Body, w.body) {
			t.Errorf("request %d: %s %s %v, want %s %s %v", i, got.Method, got.Path, got.Body, w.method, w.path, w.body)
		}
	}
}
