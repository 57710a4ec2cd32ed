package main

import (
	"net/http"
	"reflect"
	"testing"
)

func TestUsersErase(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.Method + " " + r.URL.Path {
		case "POST /admin/v1/channel-users/7/erase":
			ok(w, 200, map[string]any{"open_user_id": 7, "erased": true})
		default:
			fail(w, 404, "USER_NOT_FOUND", "user not found", nil)
		}
	})
	r := runCLI(cliEnv(srv), "users", "erase", "7", "--reason", "ticket 42")
	wantCode(t, r, 0)
	wantContains(t, "stdout", r.stdout, "user 7 erased")
	got := srv.requests()[0]
	if got.Method != "POST" || got.Path != "/admin/v1/channel-users/7/erase" || !reflect.DeepEqual(got.Body, map[string]any{"reason": "ticket 42"}) {
		t.Errorf("request %+v", got)
	}
	r = runCLI(cliEnv(srv), "users", "erase", "8", "--reason", "x")
	wantCode(t, r, 1)
	wantContains(t, "stderr", r.stderr, "USER_NOT_FOUND")
	r = runCLI(cliEnv(srv), "users", "erase", "7")
	wantCode(t, r, 2)
}

// TestAuditByAction: `audit --action user.erased` asks for the erasure
// facts only and prints them.
func TestAuditByAction(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		ok(w, 200, map[string]any{"facts": []any{map[string]any{"seq": 3, "at": "2026-01-02T03:04:05Z", "actor": "operator:2",
			"action": "user.erased", "subjects": []any{"user-7"}, "reason": "ticket 42"}}, "next_after": nil})
	})
	r := runCLI(cliEnv(srv), "audit", "--action", "user.erased")
	wantCode(t, r, 0)
	wantContains(t, "stdout", r.stdout, "user.erased")
	wantContains(t, "stdout", r.stdout, "ticket 42")
	if got := srv.requests()[0]; got.Path != "/admin/v1/audit" || !reflect.DeepEqual(got.Query["action"], []string{"user.erased"}) {
		t.Errorf("request %+v", got)
	}
}

// TestErasuresList: `erasures --app 7` asks for that app's unacknowledged
// erasures and prints one per line; a refused request exits 1.
func TestErasuresList(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("app_id") == "9" {
			fail(w, 404, "APP_NOT_FOUND", "app not found", nil)
			return
		}
		ok(w, 200, map[string]any{"erasures": []any{map[string]any{"seq": 4, "app_id": 7, "open_user_id": 1001, "erased_by": "operator:2",
			"reason": "ticket 42", "erased_at": "2026-11-29T10:20:00Z", "acknowledged": false}}, "next_after": nil})
	})
	r := runCLI(cliEnv(srv), "erasures", "--app", "7")
	wantCode(t, r, 0)
	wantContains(t, "stdout", r.stdout, "1001")
	wantContains(t, "stdout", r.stdout, "ticket 42")
	if got := srv.requests()[0]; got.Path != "/admin/v1/erasures" || !reflect.DeepEqual(got.Query["app_id"], []string{"7"}) {
		t.Errorf("request %+v", got)
	}
	r = runCLI(cliEnv(srv), "erasures", "--app", "9")
	wantCode(t, r, 1)
	wantContains(t, "stderr", r.stderr, "APP_NOT_FOUND")
	wantCode(t, runCLI(cliEnv(srv), "erasures", "extra"), 2)
}
