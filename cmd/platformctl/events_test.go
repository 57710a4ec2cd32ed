package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// testEvent is an event of the fake log: the i-th event of the log (from 0)
// is at position (i+1)*10 and is revision i of its stream.
func testEvent(stream string, i int) map[string]any {
	p := uint64(i+1) * 10
	return map[string]any{
		"id": fmt.Sprintf("ev-%d", i), "stream": stream, "type": "AppCreated", "revision": i,
		"position": map[string]any{"commit": p, "prepare": p},
		"time":     fmt.Sprintf("2025-01-02T03:04:%02dZ", i%60),
		"data":     map[string]any{"name": fmt.Sprintf("app %d", i), "n": i},
		"metadata": map[string]any{"schema": 1, "actor": "operator", "request_id": "req-" + strconv.Itoa(i)},
	}
}

func queryInt(t *testing.T, r *http.Request, name string, def int) int {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Errorf("%s=%q is not an integer", name, s)
	}
	return n
}

// historyServer serves one stream of n events.
func historyServer(t *testing.T, stream string, n int) *fakeServer {
	return newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "GET" || r.URL.Path != "/admin/v1/history" {
			t.Errorf("unexpected %s %s", r.Method, r.URL)
		}
		from, limit := queryInt(t, r, "from", 0), queryInt(t, r, "limit", 1000)
		evs := []map[string]any{}
		if r.URL.Query().Get("stream") == stream {
			for i := from; i < n && len(evs) < limit; i++ {
				evs = append(evs, testEvent(stream, i))
			}
		}
		ok(w, 200, map[string]any{"stream": r.URL.Query().Get("stream"), "events": evs})
	})
}

func TestHistory(t *testing.T) {
	srv := historyServer(t, "app-12", 3)
	r := runCLI(cliEnv(srv), "history", "app-12")
	wantCode(t, r, 0)
	first := "" +
		"revision=0 time=2025-01-02T03:04:00Z type=AppCreated position=10/10\n" +
		"  {\n" +
		"    \"n\": 0,\n" +
		"    \"name\": \"app 0\"\n" +
		"  }\n" +
		"  metadata {\"actor\":\"operator\",\"request_id\":\"req-0\",\"schema\":1}\n" +
		"\n"
	if !strings.HasPrefix(r.stdout, first) {
		t.Errorf("stdout:\n%s\nwant it to start with:\n%s", r.stdout, first)
	}
	if got := strings.Count(r.stdout, "revision="); got != 3 {
		t.Errorf("printed %d events, want 3", got)
	}
	if i1, i2 := strings.Index(r.stdout, "revision=1 "), strings.Index(r.stdout, "revision=2 "); i1 < 0 || i2 < i1 {
		t.Errorf("events out of order:\n%s", r.stdout)
	}
	reqs := srv.requests()
	if len(reqs) != 1 || reqs[0].Auth != "Bearer "+testToken ||
		fmt.Sprint(reqs[0].Query) != "map[from:[0] limit:[1000] stream:[app-12]]" {
		t.Errorf("requests %+v", reqs)
	}

	r = runCLI(cliEnv(srv), "history", "app-12", "--from", "1", "--limit", "1")
	wantCode(t, r, 0)
	if !strings.HasPrefix(r.stdout, "revision=1 ") || strings.Count(r.stdout, "revision=") != 1 {
		t.Errorf("stdout:\n%s\nwant only revision 1", r.stdout)
	}
	if q := fmt.Sprint(srv.requests()[1].Query); q != "map[from:[1] limit:[1] stream:[app-12]]" {
		t.Errorf("query %s", q)
	}

	r = runCLI(cliEnv(srv), "--json", "history", "app-12")
	wantCode(t, r, 0)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("--json printed %d lines, want 3:\n%s", len(lines), r.stdout)
	}
	var ev eventView
	if err := json.Unmarshal([]byte(lines[2]), &ev); err != nil || ev.Revision != 2 || ev.Stream != "app-12" {
		t.Errorf("--json line %q (%v)", lines[2], err)
	}

	r = runCLI(cliEnv(srv), "history", "user-404")
	wantCode(t, r, 0)
	if r.stdout != "" {
		t.Errorf("stdout %q, want nothing", r.stdout)
	}
	wantContains(t, "stderr", r.stderr, "history: stream user-404 has no events from revision 0")
}

func TestHistoryPages(t *testing.T) {
	srv := historyServer(t, "user-7", 1500)
	r := runCLI(cliEnv(srv), "history", "user-7")
	wantCode(t, r, 0)
	if got := strings.Count(r.stdout, "revision="); got != 1500 {
		t.Errorf("printed %d events, want 1500", got)
	}
	var queries []string
	for _, req := range srv.requests() {
		queries = append(queries, req.Query["from"][0]+"+"+req.Query["limit"][0])
	}
	if got := strings.Join(queries, " "); got != "0+1000 1000+1000" {
		t.Errorf("pages from+limit: %s", got)
	}

	r = runCLI(cliEnv(srv), "history", "user-7", "--limit", "1200", "--from", "100")
	wantCode(t, r, 0)
	if got := strings.Count(r.stdout, "revision="); got != 1200 {
		t.Errorf("printed %d events, want 1200", got)
	}
	queries = nil
	for _, req := range srv.requests()[2:] {
		queries = append(queries, req.Query["from"][0]+"+"+req.Query["limit"][0])
	}
	if got := strings.Join(queries, " "); got != "100+1000 1100+200" {
		t.Errorf("pages from+limit: %s", got)
	}
}

// logServer serves a global log; add appends to it.
type logServer struct {
	*fakeServer
	mu  sync.Mutex
	log []map[string]any
}

func newLogServer(t *testing.T, n int) *logServer {
	l := &logServer{}
	l.add(n)
	l.fakeServer = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "GET" || r.URL.Path != "/admin/v1/events" {
			t.Errorf("unexpected %s %s", r.Method, r.URL)
		}
		commit := queryInt(t, r, "after_commit", 0)
		prepare := queryInt(t, r, "after_prepare", commit)
		if prepare != commit {
			t.Errorf("after_commit %d and after_prepare %d differ; the fake log has equal ones", commit, prepare)
		}
		limit := queryInt(t, r, "limit", 1000)
		l.mu.Lock()
		defer l.mu.Unlock()
		evs := []map[string]any{}
		for i := commit / 10; i < len(l.log) && len(evs) < limit; i++ {
			evs = append(evs, l.log[i])
		}
		ok(w, 200, map[string]any{"events": evs})
	})
	return l
}

func (l *logServer) add(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for range n {
		i := len(l.log)
		l.log = append(l.log, testEvent("user-"+strconv.Itoa(i%3), i))
	}
}

func TestEvents(t *testing.T) {
	srv := newLogServer(t, 3)
	r := runCLI(cliEnv(srv.fakeServer), "events")
	wantCode(t, r, 0)
	want := "" +
		`position=10/10 time=2025-01-02T03:04:00Z stream=user-0 revision=0 type=AppCreated data={"n":0,"name":"app 0"}` + "\n" +
		`position=20/20 time=2025-01-02T03:04:01Z stream=user-1 revision=1 type=AppCreated data={"n":1,"name":"app 1"}` + "\n" +
		`position=30/30 time=2025-01-02T03:04:02Z stream=user-2 revision=2 type=AppCreated data={"n":2,"name":"app 2"}` + "\n"
	if r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	reqs := srv.requests()
	if len(reqs) != 1 || reqs[0].Auth != "Bearer "+testToken || fmt.Sprint(reqs[0].Query) != "map[after_commit:[0] limit:[1000]]" {
		t.Errorf("requests %+v", reqs)
	}

	r = runCLI(cliEnv(srv.fakeServer), "events", "--after-commit", "10", "--after-prepare", "10", "--limit", "1")
	wantCode(t, r, 0)
	if !strings.HasPrefix(r.stdout, "position=20/20 ") || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("stdout:\n%s\nwant only position 20/20", r.stdout)
	}
	if q := fmt.Sprint(srv.requests()[1].Query); q != "map[after_commit:[10] after_prepare:[10] limit:[1]]" {
		t.Errorf("query %s", q)
	}

	r = runCLI(cliEnv(srv.fakeServer), "events", "--json", "--after-commit", "20")
	wantCode(t, r, 0)
	var ev eventView
	if err := json.Unmarshal([]byte(r.stdout), &ev); err != nil || ev.Position != (position{30, 30}) || ev.Stream != "user-2" {
		t.Errorf("--json stdout %q (%v)", r.stdout, err)
	}
}

func TestEventsPages(t *testing.T) {
	srv := newLogServer(t, 2100)
	r := runCLI(cliEnv(srv.fakeServer), "events")
	wantCode(t, r, 0)
	if got := strings.Count(r.stdout, "\n"); got != 2100 {
		t.Errorf("printed %d events, want 2100", got)
	}
	var pages []string
	for _, req := range srv.requests() {
		pages = append(pages, fmt.Sprint(req.Query))
	}
	want := "map[after_commit:[0] limit:[1000]] | " +
		"map[after_commit:[10000] after_prepare:[10000] limit:[1000]] | " +
		"map[after_commit:[20000] after_prepare:[20000] limit:[1000]]"
	if got := strings.Join(pages, " | "); got != want {
		t.Errorf("pages:\n%s\nwant:\n%s", got, want)
	}
}

func TestEventsFollow(t *testing.T) {
	srv := newLogServer(t, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan result)
	go func() { done <- runCLIContext(ctx, cliEnv(srv.fakeServer), "events", "--follow") }()

	waitRequests := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for len(srv.requests()) < n {
			if time.Now().After(deadline) {
				t.Fatalf("follow made only %d requests, want %d", len(srv.requests()), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitRequests(3) // it kept polling at the log's end
	srv.add(1)
	seen := len(srv.requests())
	waitRequests(seen + 3)
	cancel()
	r := <-done
	wantCode(t, r, 0)
	for _, p := range []string{"position=10/10 ", "position=20/20 ", "position=30/30 "} {
		if strings.Count(r.stdout, p) != 1 {
			t.Errorf("stdout has %q %d times, want once:\n%s", p, strings.Count(r.stdout, p), r.stdout)
		}
	}
	if r.stderr != "" {
		t.Errorf("stderr %q, want nothing", r.stderr)
	}
	for _, req := range srv.requests()[1:] {
		if c := req.Query["after_commit"][0]; c != "20" && c != "30" {
			t.Errorf("a poll asked after_commit=%s, want 20 or 30 (the last event seen)", c)
		}
	}

	// --limit ends following once enough events are printed.
	r = runCLI(cliEnv(srv.fakeServer), "events", "--follow", "--limit", "2")
	wantCode(t, r, 0)
	if strings.Count(r.stdout, "\n") != 2 {
		t.Errorf("stdout:\n%s\nwant 2 events", r.stdout)
	}
}
