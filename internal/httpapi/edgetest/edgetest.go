// Package edgetest is the test kit of the HTTP edges (commandapi,
// queryapi): their routes served as the node serves them, and what a
// partner observes of one answer.
package edgetest

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/julienschmidt/httprouter"

	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

// Router serves routes as the node does: instrumented (request id) and
// with httprouter's parameters.
func Router(routes []httpapi.Route) http.Handler {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rt := httprouter.New()
	rt.RedirectTrailingSlash, rt.RedirectFixedPath = false, false
	for _, r := range routes {
		rt.Handle(r.Method, r.Path, httpapi.InstrumentRoute(log, log, r.Path, nil, r.Handle))
	}
	return rt
}

// Reply is what a partner observes of one answer.
type Reply struct {
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

// Serve sends req to h and reads the answer: an envelope whenever it has a
// body, and always a request id (the test fails otherwise).
func Serve(t testing.TB, h http.Handler, req *http.Request) Reply {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	r := Reply{Status: w.Code, Header: w.Header(), Raw: w.Body.Bytes()}
	if len(r.Raw) > 0 {
		if err := json.Unmarshal(r.Raw, &r.Env); err != nil {
			t.Fatalf("%s %s: not an envelope: %v: %s", req.Method, req.URL.Path, err, r.Raw)
		}
	}
	if r.Header.Get(httpapi.RequestIDHeader) == "" {
		t.Fatalf("%s %s: no %s header", req.Method, req.URL.Path, httpapi.RequestIDHeader)
	}
	return r
}

// Code is the envelope's code as text ("0" for success's numeric 0).
func (r Reply) Code() string {
	switch c := r.Env.Code.(type) {
	case string:
		return c
	case float64:
		return strconv.FormatFloat(c, 'f', -1, 64)
	}
	return ""
}

// Data decodes the envelope's data into a map.
func (r Reply) Data(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Env.Data, &m); err != nil {
		t.Fatalf("data of %s: %v", r.Raw, err)
	}
	return m
}

// Num reads a numeric field of the data.
func (r Reply) Num(t testing.TB, field string) int64 {
	t.Helper()
	v, ok := r.Data(t)[field].(float64)
	if !ok {
		t.Fatalf("data.%s missing or not a number in %s", field, r.Raw)
	}
	return int64(v)
}
