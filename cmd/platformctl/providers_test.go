package main

import (
	"net/http"
	"reflect"
	"testing"
)

// `providers review` sends the decision to the admin API and prints the
// answer; a second decision's 409 ALREADY_REVIEWED is an error (exit 1);
// bad arguments are usage errors (exit 2) sent nowhere.
func TestProvidersReview(t *testing.T) {
	decided := false
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.Method + " " + r.URL.Path {
		case "POST /admin/v1/service-providers/5/review":
			if decided {
				fail(w, 409, "ALREADY_REVIEWED", "already reviewed", nil)
				return
			}
			decided = true
			ok(w, 200, map[string]any{"provider_id": 5, "status": "REJECTED"})
		case "GET /admin/v1/service-providers":
			ok(w, 200, map[string]any{"providers": []any{map[string]any{"provider_id": 5, "status": "PENDING_REVIEW"}}})
		default:
			fail(w, 404, "PROVIDER_NOT_FOUND", "not found", nil)
		}
	})
	r := runCLI(cliEnv(srv), "providers", "review", "5", "--decision", "reject", "--notes", "no licence")
	wantCode(t, r, 0)
	wantContains(t, "stdout", r.stdout, "REJECTED")
	got := srv.requests()[0]
	if got.Method != "POST" || got.Path != "/admin/v1/service-providers/5/review" ||
		!reflect.DeepEqual(got.Body, map[string]any{"decision": "reject", "notes": "no licence"}) {
		t.Errorf("request %+v", got)
	}
	r = runCLI(cliEnv(srv), "providers", "review", "5", "--decision", "approve")
	wantCode(t, r, 1)
	wantContains(t, "stderr", r.stderr, "ALREADY_REVIEWED")
	n := len(srv.requests())
	for _, args := range [][]string{{"providers"}, {"providers", "review", "5"}, {"providers", "review", "x", "--decision", "approve"},
		{"providers", "review", "0", "--decision", "approve"}, {"providers", "review", "5", "--decision", "maybe"}, {"providers", "list", "extra"}, {"providers", "nope"}} {
		wantCode(t, runCLI(cliEnv(srv), args...), 2)
	}
	if len(srv.requests()) != n {
		t.Fatal("a usage error sent a request")
	}
	r = runCLI(cliEnv(srv), "providers", "list", "--app", "3")
	wantCode(t, r, 0)
	if got := srv.requests()[n]; got.Method != "GET" || got.Path != "/admin/v1/service-providers" || !reflect.DeepEqual(got.Query, map[string][]string{"app_id": {"3"}}) {
		t.Errorf("list request %+v", got)
	}
}
