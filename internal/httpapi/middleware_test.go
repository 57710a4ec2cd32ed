package httpapi

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// The access line Instrument writes is the line the request's own logger
// (the base logger with the request id) would write, field for field and
// in the same order, and a handler's log line carries the request id too,
// so an operator can join a request's lines by it.
// With a LogHandler as the access logger (InstrumentTo's direct write) the
// line is the same.
func TestInstrumentLogsTheRequestIDOnEveryLine(t *testing.T) {
	t.Run("slog", func(t *testing.T) {
		testInstrumentLogsTheRequestID(t, func(w io.Writer) slog.Handler { return slog.NewJSONHandler(w, nil) })
	})
	t.Run("LogHandler", func(t *testing.T) {
		testInstrumentLogsTheRequestID(t, func(w io.Writer) slog.Handler { return NewJSONLogHandler(w) })
	})
}

func testInstrumentLogsTheRequestID(t *testing.T, access func(io.Writer) slog.Handler) {
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	h := InstrumentTo(log, slog.New(access(&logs)), "/r", nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := NoteFrom(r.Context())
		n.AppID, n.Reason = 7, "stale"
		Logger(r.Context()).Warn("inside", "k", 1)
		Fail(w, http.StatusUnauthorized, "AUTH_401", "no")
	}))
	r := httptest.NewRequest(http.MethodGet, "/r", nil)
	r.Header.Set(RequestIDHeader, "req-1")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Header().Get(RequestIDHeader) != "req-1" {
		t.Fatalf("response request id %q", w.Header().Get(RequestIDHeader))
	}

	var want bytes.Buffer
	l := slog.New(slog.NewJSONHandler(&want, nil)).With("request_id", "req-1")
	l.Warn("inside", "k", 1)
	l.Info("request", "method", "GET", "route", "/r", "status", 401, "duration_ms", 0.0, "app_id", int64(7), "code", "AUTH_401", "auth_failure", "stale")
	vary := regexp.MustCompile(`"time":"[^"]*"|"duration_ms":[0-9.e-]+`)
	got, exp := vary.ReplaceAllString(logs.String(), ""), vary.ReplaceAllString(want.String(), "")
	if got != exp {
		t.Fatalf("log lines\n%s\nwant\n%s", got, exp)
	}
	if strings.Count(got, `"request_id":"req-1"`) != 2 {
		t.Fatalf("request id not on both lines:\n%s", got)
	}
}

// A request with no usable id gets a fresh one on the response and on its
// log lines; two such requests never share one.
func TestInstrumentGivesEachRequestItsOwnID(t *testing.T) {
	var logs bytes.Buffer
	h := Instrument(slog.New(slog.NewJSONHandler(&logs, nil)), "/r", nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		OK(w, http.StatusOK, nil)
	}))
	ids := map[string]bool{}
	for range 2 {
		r := httptest.NewRequest(http.MethodGet, "/r", nil)
		r.Header.Set(RequestIDHeader, "not a safe id!")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		id := w.Header().Get(RequestIDHeader)
		if len(id) != 24 || ids[id] || !strings.Contains(logs.String(), `"request_id":"`+id+`"`) {
			t.Fatalf("request id %q (seen %v) in logs:\n%s", id, ids, logs.String())
		}
		ids[id] = true
	}
}

// Goroutines of one request that log at once share the request's one
// logger: every line carries its id (run with -race).
func TestInstrumentLoggerIsSafeAcrossGoroutines(t *testing.T) {
	var logs syncBuffer
	h := Instrument(slog.New(slog.NewJSONHandler(&logs, nil)), "/r", nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				Logger(r.Context()).Info("worker", "i", i)
			}()
		}
		wg.Wait()
		OK(w, http.StatusOK, nil)
	}))
	r := httptest.NewRequest(http.MethodGet, "/r", nil)
	r.Header.Set(RequestIDHeader, "req-9")
	h.ServeHTTP(httptest.NewRecorder(), r)
	if n := strings.Count(logs.String(), `"request_id":"req-9"`); n != 9 {
		t.Fatalf("%d of 9 lines carry the request id:\n%s", n, logs.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
