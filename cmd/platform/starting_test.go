package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

type answer struct {
	status     int
	code       string
	retryAfter string
	body       string
}

func get(t *testing.T, base, path string) answer {
	t.Helper()
	res, err := http.Get(base + path)
	if err != nil {
		t.Error(err)
		return answer{}
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var env struct {
		Code any `json:"code"`
	}
	_ = json.Unmarshal(raw, &env)
	code, _ := env.Code.(string)
	return answer{status: res.StatusCode, code: code, retryAfter: res.Header.Get("Retry-After"), body: string(raw)}
}

// nodeHandler stands for the opened node: it answers every path itself.
var nodeHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-From", "node")
	_, _ = io.WriteString(w, "node:"+r.URL.Path)
})

// While the node opens its stores, the liveness probe answers at once and
// the readiness probe says not ready; requests sent meanwhile (several at
// once) are held and then answered by the node itself, never from a node
// that is not open yet.
func TestStartingHoldsRequestsUntilTheNodeOpens(t *testing.T) {
	gate := newStarting(slog.New(slog.DiscardHandler))
	gate.wait = time.Minute // no request here may run out of patience
	srv := httptest.NewServer(gate)
	defer srv.Close()

	if a := get(t, srv.URL, "/healthz"); a.status != http.StatusOK {
		t.Fatalf("/healthz while the node opens: %d %s", a.status, a.body)
	}
	if a := get(t, srv.URL, "/readyz"); a.status != http.StatusServiceUnavailable || a.code != "HTTP_503" {
		t.Fatalf("/readyz while the node opens: %d %s, want 503 HTTP_503", a.status, a.body)
	}

	const clients = 8
	var wg sync.WaitGroup
	got := make([]answer, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = get(t, srv.URL, "/open/v1/channel/users/1")
		}()
	}
	// Bounded: the requests are in flight or about to be; none may be
	// answered before the node opens.
	for range 20 {
		if a := get(t, srv.URL, "/healthz"); a.status != http.StatusOK {
			t.Fatalf("/healthz: %d", a.status)
		}
	}
	gate.open(nodeHandler)
	gate.open(http.NotFoundHandler()) // a second open changes nothing
	wg.Wait()
	for i, a := range got {
		if a.status != http.StatusOK || a.body != "node:/open/v1/channel/users/1" {
			t.Fatalf("request %d sent while the node opened: %d %q, want the node's answer", i, a.status, a.body)
		}
	}
	for _, path := range []string{"/readyz", "/healthz", "/anything"} {
		if a := get(t, srv.URL, path); a.body != "node:"+path {
			t.Fatalf("%s after the open: %d %q, want the node's answer", path, a.status, a.body)
		}
	}
}

// A request that waited its bound for a node still opening, or that meets
// a node whose open failed, is told to retry: 503 HTTP_503 with
// Retry-After, as reads of a projection still catching up are.
func TestStartingAnswers503PastItsBound(t *testing.T) {
	gate := newStarting(slog.New(slog.DiscardHandler))
	gate.wait = time.Millisecond
	srv := httptest.NewServer(gate)
	defer srv.Close()
	check := func(when string) {
		t.Helper()
		a := get(t, srv.URL, "/open/v1/channel/users/1")
		if a.status != http.StatusServiceUnavailable || a.code != "HTTP_503" || a.retryAfter != "1" {
			t.Fatalf("%s: %d %q Retry-After %q, want 503 HTTP_503 with Retry-After 1", when, a.status, a.body, a.retryAfter)
		}
	}
	check("past the bound while the node opens")
	gate.failed()
	gate.open(nodeHandler) // too late: the open failed, the process exits
	check("after the open failed")
	if a := get(t, srv.URL, "/healthz"); a.status != http.StatusServiceUnavailable {
		t.Fatalf("/healthz after the open failed: %d, want 503 (the process is exiting)", a.status)
	}
}
