package main

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

func stats(name string, applied uint64, rate float64, caughtUp bool, lastError string) map[string]any {
	s := map[string]any{"name": name, "position": map[string]any{"commit": applied * 10, "prepare": applied * 10},
		"events_applied": applied, "events_per_second": rate, "caught_up": caughtUp, "ready": caughtUp, "rebuilding": false,
		"since": "2025-01-02T03:04:05Z", "percent": float64(applied) / 15}
	if lastError != "" {
		s["last_error"] = lastError
	}
	return s
}

// withOwner names the node projecting a read model, as a cluster's nodes show it.
func withOwner(s map[string]any, node string) map[string]any {
	s["owner"] = node
	return s
}

func TestProjections(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "GET" || r.URL.Path != "/admin/v1/projections" {
			t.Errorf("unexpected %s %s", r.Method, r.URL)
		}
		ok(w, 200, map[string]any{"projections": []any{
			stats("apps", 120, 3.25, true, ""),
			withOwner(stats("channel_users", 4000, 812.5, false, "apply up to 40000/40000: connection refused"), "node-a"),
		}})
	})
	r := runCLI(cliEnv(srv), "projections")
	wantCode(t, r, 0)
	want := "" +
		"NAME           POSITION     EVENTS_APPLIED  EVENTS_PER_SECOND  CAUGHT_UP  OWNER   LAST_ERROR\n" +
		"apps           1200/1200    120             3.2                true       -       -\n" +
		"channel_users  40000/40000  4000            812.5              false      node-a  apply up to 40000/40000: connection refused\n"
	if r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	if got := srv.requests()[0]; got.Auth != "Bearer "+testToken {
		t.Errorf("Authorization %q", got.Auth)
	}

	r = runCLI(cliEnv(srv), "projections", "--json")
	wantCode(t, r, 0)
	var data struct {
		Projections []projectionStats `json:"projections"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &data); err != nil || len(data.Projections) != 2 || data.Projections[1].Applied != 4000 {
		t.Errorf("--json stdout %q (%v)", r.stdout, err)
	}
}

// rebuildServer rebuilds channel_users, which is ready at the poll numbered
// caughtUpAt (never if 0; at once if the log holds no event).
func rebuildServer(t *testing.T, caughtUpAt int64, logEvents int) (*fakeServer, *atomic.Int64) {
	var polls atomic.Int64
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.Method + " " + r.URL.Path {
		case "POST /admin/v1/projections/channel_users/rebuild":
			ok(w, 202, map[string]any{"projections": []any{stats("channel_users", 0, 0, false, "")}})
		case "POST /admin/v1/projections/nope/rebuild":
			fail(w, 404, "PROJECTION_NOT_FOUND", "no projection named nope", nil)
		case "GET /admin/v1/projections":
			n := polls.Add(1)
			done := caughtUpAt > 0 && n >= caughtUpAt
			applied := uint64(n) * 500
			if done {
				applied = 1500
			}
			if logEvents == 0 {
				done, applied = true, 0
			}
			lastError := ""
			if n == 1 {
				lastError = "subscription: timeout"
			}
			users := stats("channel_users", applied, float64(n)*1000, done, lastError)
			if n == 2 { // in a cluster, the node projecting the read model is named
				users = withOwner(users, "node-b")
			}
			ok(w, 200, map[string]any{"projections": []any{stats("apps", 7, 1, true, ""), users}})
		default:
			t.Errorf("unexpected %s %s", r.Method, r.URL)
			fail(w, 404, "NOT_FOUND", "no such route", nil)
		}
	})
	return srv, &polls
}

func TestRebuild(t *testing.T) {
	srv, polls := rebuildServer(t, 3, 1500)
	r := runCLI(cliEnv(srv), "rebuild", "channel_users")
	wantCode(t, r, 0)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	want := []string{
		"channel_users: 500 events, 1000 ev/s, 33.3% of the log, position 5000/5000, last error: subscription: timeout",
		"channel_users: 1000 events, 2000 ev/s, 66.7% of the log, position 10000/10000, projected by node-b",
		"channel_users: 1500 events, 3000 ev/s, 100.0% of the log, position 15000/15000",
	}
	if len(lines) != 4 || strings.Join(lines[:3], "\n") != strings.Join(want, "\n") {
		t.Fatalf("stdout:\n%s\nwant the progress lines:\n%s\nand a summary", r.stdout, strings.Join(want, "\n"))
	}
	if !regexp.MustCompile(`^channel_users: rebuilt 1500 events in \d+\.\d s, \d+ ev/s$`).MatchString(lines[3]) {
		t.Errorf("summary line %q", lines[3])
	}
	if polls.Load() != 3 {
		t.Errorf("%d polls, want 3", polls.Load())
	}
	reqs := srv.requests()
	if reqs[0].Method != "POST" || reqs[0].Path != "/admin/v1/projections/channel_users/rebuild" || reqs[0].Auth != "Bearer "+testToken {
		t.Errorf("first request %+v, want the rebuild", reqs[0])
	}
	for _, req := range reqs {
		if req.Auth != "Bearer "+testToken {
			t.Errorf("%s %s without the admin token", req.Method, req.Path)
		}
	}
}

func TestRebuildJSON(t *testing.T) {
	srv, _ := rebuildServer(t, 2, 1500)
	r := runCLI(cliEnv(srv), "--json", "rebuild", "channel_users")
	wantCode(t, r, 0)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("stdout:\n%s\nwant 3 JSON lines (the rebuild answer and two polls)", r.stdout)
	}
	var last projectionStats
	if err := json.Unmarshal([]byte(lines[2]), &last); err != nil || !last.CaughtUp || last.Applied != 1500 || last.Name != "channel_users" {
		t.Errorf("last line %q (%v)", lines[2], err)
	}
}

func TestRebuildEmptyLog(t *testing.T) {
	srv, polls := rebuildServer(t, 0, 0)
	r := runCLI(cliEnv(srv), "rebuild", "channel_users")
	wantCode(t, r, 0)
	if !regexp.MustCompile(`^channel_users: 0 events, 1000 ev/s, 0.0% of the log, position 0/0, last error: subscription: timeout\nchannel_users: rebuilt 0 events in \d+\.\d s, 0 ev/s\n$`).MatchString(r.stdout) {
		t.Errorf("stdout %q", r.stdout)
	}
	if polls.Load() != 1 {
		t.Errorf("polled %d times for an empty log, want 1", polls.Load())
	}
}

func TestRebuildTimeout(t *testing.T) {
	srv, polls := rebuildServer(t, 0, 10)
	r := runCLI(cliEnv(srv), "rebuild", "channel_users", "--timeout", "100ms")
	wantCode(t, r, 1)
	wantContains(t, "stderr", r.stderr, "error: rebuild channel_users: not caught up after 100ms; the replay goes on in the server")
	if polls.Load() == 0 {
		t.Errorf("never polled")
	}
	if strings.Contains(r.stdout, "rebuilt") {
		t.Errorf("printed a summary after a timeout:\n%s", r.stdout)
	}
}

func TestRebuildUnknown(t *testing.T) {
	srv, _ := rebuildServer(t, 0, 10)
	r := runCLI(cliEnv(srv), "rebuild", "nope")
	wantCode(t, r, 1)
	wantContains(t, "stderr", r.stderr, "error: PROJECTION_NOT_FOUND: no projection named nope\n")
	if len(srv.requests()) != 1 {
		t.Errorf("%d requests after a failed rebuild, want 1", len(srv.requests()))
	}
}
