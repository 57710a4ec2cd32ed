package main

import (
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/queryapi"
)

// starting is the server's handler from the moment it listens, before the
// node has opened its stores (event log, key log, read-model snapshot): a
// start after a crash or on a big log takes seconds, and an orchestrator's
// liveness probe must not kill the process meanwhile. /healthz answers at
// once; /readyz says 503 until the node is open and then whatever the
// node's own /readyz says (not ready until every family is restored and
// caught up); every other request waits for the node, at most wait (the
// same bound reads have for their projection), then goes to it, or is
// answered 503 with Retry-After so the client retries. A request that went
// to the node meets the node's own waits (read-your-writes, the app
// directory), so nothing is answered from read models not yet restored.
type starting struct {
	log  *slog.Logger
	wait time.Duration

	once   sync.Once
	opened chan struct{} // closed by open or failed
	node   http.Handler  // set before opened closes; nil if the open failed
}

// newStarting returns the handler to serve while the node opens.
func newStarting(log *slog.Logger) *starting {
	return &starting{log: log, wait: queryapi.ReadTimeout, opened: make(chan struct{})}
}

// open hands every request, waiting or to come, to the opened node.
func (s *starting) open(h http.Handler) {
	s.once.Do(func() { s.node = h; close(s.opened) })
}

// failed makes waiting requests answer 503 while the process exits.
func (s *starting) failed() { s.once.Do(func() { close(s.opened) }) }

func (s *starting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case <-s.opened:
		s.serve(w, r)
		return
	default:
	}
	switch r.URL.Path {
	case "/healthz":
		httpapi.Instrument(s.log, "/healthz", nil, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			httpapi.OK(w, http.StatusOK, map[string]any{"status": "ok"})
		})).ServeHTTP(w, r)
		return
	case "/readyz":
		httpapi.Instrument(s.log, "/readyz", nil, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			httpapi.WriteJSON(w, http.StatusServiceUnavailable, httpapi.Envelope{Code: "HTTP_503",
				Message: "the node is opening its stores", Data: map[string]any{}, Timestamp: time.Now().Format(time.RFC3339)})
		})).ServeHTTP(w, r)
		return
	}
	t := time.NewTimer(s.wait)
	defer t.Stop()
	select {
	case <-s.opened:
		s.serve(w, r)
	case <-t.C:
		s.unavailable(w, r)
	case <-r.Context().Done():
		s.unavailable(w, r)
	}
}

func (s *starting) serve(w http.ResponseWriter, r *http.Request) {
	if s.node == nil {
		s.unavailable(w, r)
		return
	}
	s.node.ServeHTTP(w, r)
}

func (s *starting) unavailable(w http.ResponseWriter, r *http.Request) {
	httpapi.Instrument(s.log, "starting", nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpapi.Error(w, r, &httpapi.Problem{Status: http.StatusServiceUnavailable, Code: "HTTP_503",
			Message: "the node is starting; retry shortly", Headers: map[string]string{"Retry-After": "1"}})
	})).ServeHTTP(w, r)
}
