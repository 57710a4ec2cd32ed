package tracing_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"go.opentelemetry.io/otel/trace"

	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/internal/tracing"
)

// otlpReceiver is an OTLP/HTTP collector on loopback: it decodes every
// export request as the protocol defines it (protobuf) and keeps its spans.
type otlpReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	reqs  []*collectortrace.ExportTraceServiceRequest
	paths []string
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var msg collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.reqs, r.paths = append(r.reqs, &msg), append(r.paths, req.URL.Path)
		r.mu.Unlock()
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *otlpReceiver) spans() (out []*tracepb.Span, resources []map[string]string, paths []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, req := range r.reqs {
		for _, rs := range req.ResourceSpans {
			res := map[string]string{}
			for _, kv := range rs.GetResource().GetAttributes() {
				res[kv.Key] = kv.GetValue().GetStringValue()
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					out = append(out, s)
					resources = append(resources, res)
				}
			}
		}
	}
	return out, resources, append([]string(nil), r.paths...)
}

// TestOTLPExportConfiguredByEnvironment: with nothing but the standard
// OTEL_* variables, a request's server span reaches an OTLP/HTTP receiver
// on loopback, at /v1/traces, with the service name and resource
// attributes the variables give, by the time Shutdown returns.
func TestOTLPExportConfiguredByEnvironment(t *testing.T) {
	rcv := newOTLPReceiver(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_SERVICE_NAME", "pop-test")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=ci,service.namespace=health")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	p, err := tracing.FromEnv(context.Background(), func(k string) string { return getenv(k) }, "v1.2.3")
	if err != nil || p == nil {
		t.Fatalf("FromEnv: %v, %v", p, err)
	}
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	if !tracing.On() {
		t.Fatal("tracing is off after FromEnv")
	}

	h := httpapi.Instrument(discard(), "/v1/things/:id", nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpapi.NoteFrom(r.Context()).AppID = 77
		w.WriteHeader(http.StatusNoContent)
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/v1/things/secret-path-id?token=abc", nil)
	req.Header.Set(httpapi.RequestIDHeader, "req-otlp-1")
	req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if tracing.On() {
		t.Fatal("tracing still on after Shutdown")
	}

	spans, resources, paths := rcv.spans()
	if len(spans) != 1 {
		t.Fatalf("receiver got %d spans, want 1", len(spans))
	}
	s, res0 := spans[0], resources[0]
	if paths[0] != "/v1/traces" {
		t.Fatalf("exported to %s, want /v1/traces", paths[0])
	}
	if s.Name != "GET /v1/things/:id" || s.Kind != tracepb.Span_SPAN_KIND_SERVER || len(s.ParentSpanId) != 0 {
		t.Fatalf("span %q kind %v parent %x", s.Name, s.Kind, s.ParentSpanId)
	}
	attrs := map[string]string{}
	for _, kv := range s.Attributes {
		v := kv.GetValue().GetStringValue()
		if v == "" {
			v = strings.TrimSpace(strings.TrimPrefix(kv.GetValue().String(), "int_value:"))
		}
		attrs[kv.Key] = v
	}
	for k, want := range map[string]string{"http.route": "/v1/things/:id", "http.request.method": "GET", "http.response.status_code": "204", "platform.request_id": "req-otlp-1", "platform.app_id": "77"} {
		if attrs[k] != want {
			t.Fatalf("attribute %s = %q, want %q (all: %v)", k, attrs[k], want, attrs)
		}
	}
	for k, v := range attrs {
		if strings.Contains(v, "secret-path-id") || strings.Contains(v, "token") {
			t.Fatalf("attribute %s carries the request's path or query: %q", k, v)
		}
	}
	// The caller's trace is linked, not joined.
	if len(s.Links) != 1 || trace.TraceID(s.Links[0].TraceId).String() != "4bf92f3577b34da6a3ce929d0e0e4736" || trace.TraceID(s.TraceId).String() == "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("span trace %x links %v: want a trace of its own linked to the caller's", s.TraceId, s.Links)
	}
	for k, want := range map[string]string{"service.name": "pop-test", "service.version": "v1.2.3", "deployment.environment.name": "ci", "service.namespace": "health", "telemetry.sdk.language": "go"} {
		if res0[k] != want {
			t.Fatalf("resource %s = %q, want %q (all: %v)", k, res0[k], want, res0)
		}
	}
}

// TestShutdownIsBounded: a collector that never answers holds a stopping
// node up for at most ShutdownTimeout, not forever.
func TestShutdownIsBounded(t *testing.T) {
	block := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer hung.Close()
	defer close(block)
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", hung.URL+"/v1/traces")
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "600000")
	p, err := tracing.FromEnv(context.Background(), getenv, "")
	if err != nil || p == nil || p.Exporter != tracing.ExporterOTLP {
		t.Fatalf("an OTLP endpoint alone turns tracing on with otlp: %v, %v", p, err)
	}
	_, span := tracing.Start(context.Background(), trace.SpanKindInternal, "x")
	span.End()
	done := make(chan error, 1)
	go func() { done <- p.Shutdown(context.Background()) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Shutdown reported success though nothing was exported")
		}
	case <-time.After(tracing.ShutdownTimeout + 20*time.Second):
		t.Fatalf("Shutdown still waiting after %s", tracing.ShutdownTimeout+20*time.Second)
	}
}

// TestOffByDefault: with no OTEL_* variable tracing stays off, and Start
// hands back the caller's context with a span that records nothing.
func TestOffByDefault(t *testing.T) {
	p, err := tracing.FromEnv(context.Background(), func(string) string { return "" }, "")
	if err != nil || p != nil {
		t.Fatalf("FromEnv with nothing set: %v, %v", p, err)
	}
	for _, env := range []map[string]string{
		{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"},
		{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"},
	} {
		if p, err := tracing.FromEnv(context.Background(), func(k string) string { return env[k] }, ""); err != nil || p != nil {
			t.Fatalf("%v: %v, %v", env, p, err)
		}
	}
	if tracing.On() {
		t.Fatal("tracing on")
	}
	ctx := context.Background()
	got, span := tracing.Start(ctx, trace.SpanKindServer, "x")
	if got != ctx || span.IsRecording() || tracing.Traceparent(got) != "" {
		t.Fatal("Start while off changed the context or records")
	}
	for _, bad := range []map[string]string{{"OTEL_TRACES_EXPORTER": "zipkin"}, {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}} {
		if _, err := tracing.FromEnv(context.Background(), func(k string) string { return bad[k] }, ""); err == nil {
			t.Fatalf("%v accepted", bad)
		}
	}
}

// TestTraceparentRoundTrip: what FormatTraceparent writes ParseTraceparent
// reads back; malformed values link to nothing.
func TestTraceparentRoundTrip(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	for _, flags := range []trace.TraceFlags{0, trace.FlagsSampled} {
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags})
		s := tracing.FormatTraceparent(sc)
		got, ok := tracing.ParseTraceparent(s)
		if !ok || got.TraceID() != tid || got.SpanID() != sid || got.TraceFlags() != flags || !got.IsRemote() {
			t.Fatalf("%s read back as %v %v", s, got, ok)
		}
	}
	for _, bad := range []string{"", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01x", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"} {
		if _, ok := tracing.ParseTraceparent(bad); ok {
			t.Fatalf("%q parsed", bad)
		}
	}
	if _, ok := tracing.ParseTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later"); !ok {
		t.Fatal("a later version's traceparent with more fields is read by its first four")
	}
	if got := tracing.Category("user-42"); got != "user" {
		t.Fatalf("Category(user-42) = %q", got)
	}
}

// BenchmarkStartOff is the cost of one instrumented place while tracing
// is off: no allocation.
func BenchmarkStartOff(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, span := tracing.Start(ctx, trace.SpanKindInternal, "x")
		span.End()
		_ = tracing.Traceparent(ctx)
	}
}
