// Package openapitest checks real HTTP traffic against the platform's OpenAPI
// document, so tests that exercise the handlers also prove the published
// contract still describes them.
//
// Only responses are validated: requests are not (tests send bad requests on
// purpose) and security requirements are not checked. A request whose path or
// method the document does not describe fails the test unless the node
// answered it with its documented catch-all (404 NOT_FOUND for an unknown
// path, 405 METHOD_NOT_ALLOWED for an unknown method), i.e. unless the server
// agrees the operation does not exist; /metrics is exempt.
//
// With PLATFORM_OPENAPI_RECORD set to a folder, every exchange that matches
// the document is also written there (the first of each operation and
// status), so `go run ./internal/openapi/examplegen` can give the document
// examples taken from real traffic rather than typed by hand.
//
// With PLATFORM_OPENAPI_TRAFFIC set to a folder, every response is also
// appended there (one JSON line per exchange, one file per process), so a
// validator independent of this package's kin-openapi can check each one
// against the document (scripts/openapi-conformance.py does, strictly).
package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/healthtech/partner-open-platform/internal/openapi"
)

// Doc is the contract, parsed and validated once per test process (the
// 600 kB document costs about a third of a CPU-second to load under -race,
// and a package's tests ask for it many times). Every caller shares it:
// callers only read it, never change it.
func Doc(t testing.TB) *openapi3.T {
	t.Helper()
	doc, err := document()
	if err != nil {
		t.Fatalf("openapi: %v", err)
	}
	return doc
}

// parsed is the process's one document (Doc's, and the transports' source).
var parsed struct {
	once sync.Once
	doc  *openapi3.T
	err  error
}

func document() (*openapi3.T, error) {
	parsed.once.Do(func() { parsed.doc, parsed.err = load() })
	return parsed.doc, parsed.err
}

// load parses and validates the contract.
func load() (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapi.Spec)
	if err != nil {
		return nil, fmt.Errorf("load openapi.yaml: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("openapi.yaml is not a valid OpenAPI document: %w", err)
	}
	return doc, nil
}

// unrouted are paths that need not be in the document: the Prometheus
// endpoint is owned by the metrics library, not by our contract.
var unrouted = map[string]bool{"/metrics": true}

// NewTransport makes drift between handlers and openapi.yaml fail the test that exposed it, by validating every response base (nil means http.DefaultTransport) returns.
func NewTransport(t testing.TB, base http.RoundTripper) http.RoundTripper {
	t.Helper()
	if base == nil {
		base = http.DefaultTransport
	}
	shared.once.Do(func() {
		doc, err := document()
		if err != nil {
			shared.err = err
			return
		}
		shared.doc = routable(doc)
		shared.router, shared.err = gorillamux.NewRouter(shared.doc)
	})
	if shared.err != nil {
		t.Fatalf("openapi: %v", shared.err)
	}
	return &transport{t: t, base: base, doc: shared.doc, router: shared.router, record: os.Getenv(RecordEnv), traffic: os.Getenv(TrafficEnv)}
}

// shared is the transports' one document and router, made once per test
// process from Doc's document: the end-to-end packages start hundreds of
// nodes, each with its own transport. The transports only read it
// (routing and validating responses), so sharing it is safe; -race checks
// that claim in every parallel end-to-end test.
var shared struct {
	once   sync.Once
	doc    *openapi3.T
	router routers.Router
	err    error
}

// routable is doc without its servers, so routes match any host (test
// servers listen on arbitrary 127.0.0.1 ports). doc itself is left as it
// is: the copy has its own top level and path items, and shares the rest.
func routable(doc *openapi3.T) *openapi3.T {
	r := *doc
	r.Servers = nil
	r.Paths = openapi3.NewPaths()
	for path, item := range doc.Paths.Map() {
		it := *item
		it.Servers = nil
		r.Paths.Set(path, &it)
	}
	return &r
}

// TrafficEnv names the folder every response is logged into (see the
// package comment).
const TrafficEnv = "PLATFORM_OPENAPI_TRAFFIC"

// Exchange is one line of the traffic log: the documented operation the
// request matched (Path is the document's path template; empty with
// CatchAll set when the node answered an undocumented path or method with
// that components.responses entry) and the response as received.
type Exchange struct {
	Method      string          `json:"method"`
	Path        string          `json:"path,omitempty"`
	CatchAll    string          `json:"catch_all,omitempty"`
	URI         string          `json:"uri"`
	Status      int             `json:"status"`
	ContentType string          `json:"content_type,omitempty"`
	Body        json.RawMessage `json:"body,omitempty"`
	// Text is a body that is not JSON (a YAML document, a CSV export).
	Text string `json:"text,omitempty"`
}

// trafficLog is this process's traffic file, opened on first use; test
// processes run in parallel, so each writes its own.
var trafficLog struct {
	sync.Mutex
	dir string
	f   *os.File
}

// logExchange appends ex to the process's traffic file in dir.
func logExchange(dir string, ex Exchange) error {
	line, err := json.Marshal(ex)
	if err != nil {
		return err
	}
	trafficLog.Lock()
	defer trafficLog.Unlock()
	if trafficLog.f == nil || trafficLog.dir != dir {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		f, err := os.CreateTemp(dir, "traffic-"+strconv.Itoa(os.Getpid())+"-*.jsonl")
		if err != nil {
			return err
		}
		trafficLog.f, trafficLog.dir = f, dir
	}
	_, err = trafficLog.f.Write(append(line, '\n'))
	return err
}

// RecordEnv names the folder exchanges are recorded into (see the package comment).
const RecordEnv = "PLATFORM_OPENAPI_RECORD"

// Recording is one recorded exchange: the file examplegen reads.
type Recording struct {
	Method      string          `json:"method"`
	Path        string          `json:"path"`
	OperationID string          `json:"operation_id"`
	Status      int             `json:"status"`
	Request     json.RawMessage `json:"request,omitempty"`
	Response    json.RawMessage `json:"response,omitempty"`
}

type transport struct {
	t       testing.TB
	base    http.RoundTripper
	doc     *openapi3.T
	router  routers.Router
	record  string
	traffic string
}

func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if tr.record != "" && req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("openapitest: read request body: %w", err)
		}
		reqBody = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	res, err := tr.base.RoundTrip(req)
	if err != nil {
		return res, err
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("openapitest: read response body: %w", err)
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	if err := tr.check(req, res, body); err != nil {
		tr.t.Errorf("openapi drift: %s %s -> %d: %v\nbody: %s", req.Method, req.URL.RequestURI(), res.StatusCode, err, clip(body))
	} else if tr.record != "" {
		tr.save(req, res.StatusCode, reqBody, body)
	}
	if tr.traffic != "" {
		tr.log(req, res, body)
	}
	return res, nil
}

// log appends the exchange to the traffic log when the document routes it
// (or the node answered it with a catch-all); /metrics is not ours.
func (tr *transport) log(req *http.Request, res *http.Response, body []byte) {
	ex := Exchange{Method: req.Method, URI: req.URL.RequestURI(), Status: res.StatusCode, ContentType: res.Header.Get("Content-Type")}
	route, _, err := tr.router.FindRoute(req)
	switch {
	case err == nil:
		ex.Path = route.Path
	case errors.Is(err, routers.ErrPathNotFound) && !unrouted[req.URL.Path]:
		ex.CatchAll = "RouteNotFound"
	case errors.Is(err, routers.ErrMethodNotAllowed):
		ex.CatchAll = "MethodNotAllowed"
	default:
		return
	}
	switch {
	case len(body) == 0:
	case strings.Contains(ex.ContentType, "json") && json.Valid(body):
		ex.Body = body
	default:
		ex.Text = string(body)
	}
	if err := logExchange(tr.traffic, ex); err != nil {
		tr.t.Errorf("openapitest: traffic log: %v", err)
	}
}

// save writes the exchange unless one of its operation and status is
// already recorded; only JSON bodies are kept.
func (tr *transport) save(req *http.Request, status int, reqBody, body []byte) {
	route, _, err := tr.router.FindRoute(req)
	if err != nil || route.Operation == nil || route.Operation.OperationID == "" {
		return
	}
	rec := Recording{Method: req.Method, Path: route.Path, OperationID: route.Operation.OperationID, Status: status}
	if json.Valid(reqBody) {
		rec.Request = reqBody
	}
	if json.Valid(body) {
		rec.Response = body
	}
	if err := Save(tr.record, rec); err != nil {
		tr.t.Errorf("openapitest: record: %v", err)
	}
}

// Save writes one recording into dir unless one of its operation and
// status is there already (the first one wins, across test processes).
func Save(dir string, rec Recording) error {
	raw, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	name := filepath.Join(dir, rec.OperationID+"."+strconv.Itoa(rec.Status)+".json")
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(raw)
	return err
}

// check returns why the exchange does not match the document, or nil.
func (tr *transport) check(req *http.Request, res *http.Response, body []byte) error {
	route, params, err := tr.router.FindRoute(req)
	switch {
	case errors.Is(err, routers.ErrPathNotFound):
		if unrouted[req.URL.Path] {
			return nil
		}
		return tr.catchAll(res, body, http.StatusNotFound, "RouteNotFound",
			"path is not in openapi.yaml but the server did not answer 404 NOT_FOUND")
	case errors.Is(err, routers.ErrMethodNotAllowed):
		return tr.catchAll(res, body, http.StatusMethodNotAllowed, "MethodNotAllowed",
			"method is not documented for this path but the server did not answer 405 METHOD_NOT_ALLOWED")
	case err != nil:
		return fmt.Errorf("find route: %w", err)
	}
	opts := &openapi3filter.Options{
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		IncludeResponseStatus: true,
		MultiError:            true,
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts},
		Status:                 res.StatusCode,
		Header:                 res.Header,
		Options:                opts,
	}
	in.SetBodyBytes(body)
	return openapi3filter.ValidateResponse(context.Background(), in)
}

// catchAll accepts an undocumented operation only when the server answered
// with the document's catch-all response of that status.
func (tr *transport) catchAll(res *http.Response, body []byte, status int, component, why string) error {
	if res.StatusCode != status {
		return errors.New(why)
	}
	ref := tr.doc.Components.Responses[component]
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("%s: components.responses.%s is missing", why, component)
	}
	mt := ref.Value.Content.Get(res.Header.Get("Content-Type"))
	if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
		return fmt.Errorf("%s: content type %q is not that of components.responses.%s", why, res.Header.Get("Content-Type"), component)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("%s: body is not JSON: %w", why, err)
	}
	if err := mt.Schema.Value.VisitJSON(v, openapi3.MultiErrors(), openapi3.VisitAsResponse()); err != nil {
		return fmt.Errorf("%s: body does not match components.responses.%s: %w", why, component, err)
	}
	if res.Header.Get("X-Request-Id") == "" {
		return fmt.Errorf("%s: no X-Request-Id header", why)
	}
	return nil
}

func clip(b []byte) string {
	const max = 2000
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}
