package openapitest_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/openapi/openapitest"
)

// recorder collects what the transport reports instead of failing the test.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Helper() {}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.errs
	r.errs = nil
	return out
}

const ts = `"timestamp":"2024-05-01T08:00:00+08:00"`

func TestTransportFailsOnDrift(t *testing.T) {
	// The responses here drift on purpose: they are no platform's, so they
	// stay out of the traffic log the independent validator reads.
	t.Setenv(openapitest.TrafficEnv, "")
	var status int
	var body, contentType string
	var requestID = "req-1"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requestID != "" {
			w.Header().Set("X-Request-Id", requestID)
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	rec := &recorder{TB: t}
	client := &http.Client{Transport: openapitest.NewTransport(rec, srv.Client().Transport)}

	const okHealth = `{"success":true,"code":0,"message":"ok","data":{"status":"ok"},` + ts + `}`
	const snapshotUser = `{"open_user_id":1,"channel_user_id":"u","name":"n","nickname":null,"gender":"unknown","avatar":null,"phone":null,"email":null,"birth_date":null,"status":"ACTIVE","registered_at":"2024-05-01 08:00:00"}`
	cases := []struct {
		name, method, path string
		status             int
		body, ct, reqID    string
		drift              string // substring of the expected report; "" for none
	}{
		{"conforming", "GET", "/healthz", 200, okHealth, "application/json; charset=utf-8", "r", ""},
		{"missing request id", "GET", "/healthz", 200, okHealth, "application/json", "", `"X-Request-Id" missing`},
		{"extra field", "GET", "/healthz", 200, `{"success":true,"code":0,"message":"ok","data":{"status":"ok"},"extra":1,` + ts + `}`, "application/json", "r", "doesn't match schema"},
		{"undocumented status", "GET", "/healthz", 418, `{}`, "application/json", "r", "status is not supported"},
		{"wrong content type", "GET", "/healthz", 200, okHealth, "text/html", "r", "Content-Type"},
		{"snapshot with nulls", "GET", "/open/v1/channel/users/1", 200,
			`{"success":true,"code":0,"message":"ok","data":{"user":` + snapshotUser + `,"family_groups":[],"family_members":[]},` + ts + `}`, "application/json", "r", ""},
		{"snapshot missing field", "GET", "/open/v1/channel/users/1", 200,
			`{"success":true,"code":0,"message":"ok","data":{"user":` + strings.Replace(snapshotUser, `"nickname":null,`, "", 1) + `,"family_groups":[],"family_members":[]},` + ts + `}`, "application/json", "r", "nickname"},
		{"wrong error code", "GET", "/open/v1/channel/users/1", 404, `{"success":false,"code":"FAMILY_GROUP_NOT_FOUND","message":"x",` + ts + `}`, "application/json", "r", "doesn't match schema"},
		{"validation error", "PATCH", "/open/v1/channel/users/1", 422, `{"success":false,"code":"VALIDATION_ERROR","message":"x","errors":{"name":["is required"]},` + ts + `}`, "application/json", "r", ""},
		{"validation error without errors", "PATCH", "/open/v1/channel/users/1", 422, `{"success":false,"code":"VALIDATION_ERROR","message":"x",` + ts + `}`, "application/json", "r", "errors"},
		{"no-data write with data", "DELETE", "/open/v1/channel/users/1/family-members/2", 200, `{"success":true,"code":0,"message":"ok","data":{},` + ts + `}`, "application/json", "r", "doesn't match schema"},
		{"undocumented path served", "GET", "/open/v1/secret", 200, okHealth, "application/json", "r", "not in openapi.yaml"},
		{"undocumented path refused", "GET", "/open/v1/secret", 404, `{"success":false,"code":"NOT_FOUND","message":"no such route",` + ts + `}`, "application/json", "r", ""},
		{"undocumented method served", "PUT", "/healthz", 200, okHealth, "application/json", "r", "method is not documented"},
		{"undocumented method refused", "PUT", "/healthz", 405, `{"success":false,"code":"METHOD_NOT_ALLOWED","message":"m",` + ts + `}`, "application/json", "r", ""},
		{"metrics", "GET", "/metrics", 200, "# HELP x\n", "text/plain; version=0.0.4; charset=utf-8", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body, contentType, requestID = c.status, c.body, c.ct, c.reqID
			req, err := http.NewRequest(c.method, srv.URL+c.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil || string(got) != c.body {
				t.Fatalf("caller read %q, %v; want the body intact", got, err)
			}
			errs := rec.take()
			switch {
			case c.drift == "" && len(errs) > 0:
				t.Fatalf("unexpected report: %v", errs)
			case c.drift != "" && len(errs) != 1:
				t.Fatalf("want one report containing %q, got %v", c.drift, errs)
			case c.drift != "" && !strings.Contains(errs[0], c.drift):
				t.Fatalf("report %q lacks %q", errs[0], c.drift)
			case c.drift != "" && !strings.Contains(errs[0], c.method+" "+c.path) && !strings.Contains(errs[0], fmt.Sprint(c.status)):
				t.Fatalf("report %q lacks method, path and status", errs[0])
			}
		})
	}
}

func TestDocLoads(t *testing.T) {
	doc := openapitest.Doc(t)
	if doc.Paths.Find("/open/v1/channel/users/{openUserId}") == nil {
		t.Fatal("snapshot path missing")
	}
}
