package webhooks_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/internal/tracing"
)

// These tests install a tracer provider for the whole process, so they do
// not run in parallel with the package's other tests (whose events would
// otherwise carry trace contexts).

// traced installs an in-memory exporter for the test.
func traced(t *testing.T) *tracetest.InMemoryExporter {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	restore := tracing.Install(tp)
	t.Cleanup(func() {
		restore()
		_ = tp.Shutdown(context.Background())
	})
	return exp
}

func attr(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// waitSpans polls the exporter until done accepts what it holds.
func waitSpans(t *testing.T, exp *tracetest.InMemoryExporter, done func([]tracetest.SpanStub) bool) []tracetest.SpanStub {
	t.Helper()
	deadline := time.Now().Add(harness.WaitBound)
	for {
		spans := exp.GetSpans()
		if done(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			for _, s := range spans {
				t.Logf("span %q kind %v trace %s parent %s links %d", s.Name, s.SpanKind, s.SpanContext.TraceID(), s.Parent.SpanID(), len(s.Links))
			}
			t.Fatalf("the spans awaited did not all end within %s", harness.WaitBound)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func deliveredAttempts(spans []tracetest.SpanStub) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if v, ok := attr(s, "platform.webhook.outcome"); ok && s.Name == "webhook attempt" && v.AsString() == "delivered" {
			out = append(out, s)
		}
	}
	return out
}

// requestSpan finds the server span of the request answered with request id id.
func requestSpan(t *testing.T, spans []tracetest.SpanStub, id string) tracetest.SpanStub {
	t.Helper()
	for _, s := range spans {
		if v, ok := attr(s, "platform.request_id"); ok && v.AsString() == id && s.SpanKind == trace.SpanKindServer {
			return s
		}
	}
	t.Fatalf("no server span for request %s", id)
	return tracetest.SpanStub{}
}

// TestTraceOfRegisterToWebhook: one register on an embedded node, with
// tracing on, gives a trace of the request (server span → command span →
// append span) and, for each webhook it causes, an attempt span of its own
// linked to that request's trace with the POST as its client child; the
// partner's receiver gets no traceparent, and no span carries a personal
// value of the request.
func TestTraceOfRegisterToWebhook(t *testing.T) {
	exp := traced(t)
	p := harness.Start(t, node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true})
	a := p.CreateApp("partner")
	rcv := harness.NewReceiver(t)
	rcv.Secret = a.WebhookSecret
	p.ConfigureWebhook(a, rcv.Srv.URL+"/hooks", "user.family_member.*")

	res := a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("trace-u-1"), http.StatusCreated, "0")
	reqID := res.Header.Get("X-Request-Id")
	got := rcv.WaitFor(2) // the register's two family members
	for _, w := range got {
		if tp := w.Header.Get("Traceparent"); tp != "" || w.Header.Get("Tracestate") != "" {
			t.Fatalf("the receiver got trace headers %q: the platform's trace context is not sent to partners", tp)
		}
	}
	spans := waitSpans(t, exp, func(s []tracetest.SpanStub) bool { return len(deliveredAttempts(s)) >= 2 })

	server := requestSpan(t, spans, reqID)
	if server.Name != "POST /open/v1/channel/users" || server.Parent.IsValid() {
		t.Fatalf("request span %q (parent %v), want the root POST /open/v1/channel/users", server.Name, server.Parent)
	}
	if v, _ := attr(server, "http.response.status_code"); v.AsInt64() != http.StatusCreated {
		t.Fatalf("request span status %v, want 201", v.AsInt64())
	}
	if v, _ := attr(server, "platform.app_id"); v.AsInt64() != a.ID {
		t.Fatalf("request span app %v, want %d", v.AsInt64(), a.ID)
	}
	traceID := server.SpanContext.TraceID()
	byID := map[trace.SpanID]tracetest.SpanStub{}
	var inRequest []tracetest.SpanStub
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = s
		if s.SpanContext.TraceID() == traceID {
			inRequest = append(inRequest, s)
		}
	}
	// The command runs under the request, and its appends under it.
	var command tracetest.SpanStub
	for _, s := range inRequest {
		if strings.HasPrefix(s.Name, "command ") && s.Parent.SpanID() == server.SpanContext.SpanID() {
			command = s
		}
	}
	if !command.SpanContext.IsValid() {
		t.Fatalf("no command span under the request span; the request's trace holds %v", names(inRequest))
	}
	appends := 0
	for _, s := range inRequest {
		if s.Name == "events.append" {
			if v, _ := attr(s, "db.system.name"); v.AsString() != "bbolt" {
				t.Fatalf("append span db.system.name %q, want bbolt", v.AsString())
			}
			if s.Parent.SpanID() == command.SpanContext.SpanID() {
				appends++
			}
		}
		if s.Parent.IsValid() {
			if _, ok := byID[s.Parent.SpanID()]; !ok {
				t.Fatalf("span %q of the request's trace has a parent that is none of its spans", s.Name)
			}
		}
	}
	if appends == 0 {
		t.Fatalf("no append span under the command; the request's trace holds %v", names(inRequest))
	}

	// Each delivered attempt: a trace of its own, linked to a span of the
	// request's trace, with its POST as a client child.
	for _, at := range deliveredAttempts(spans) {
		if at.SpanContext.TraceID() == traceID || at.Parent.IsValid() {
			t.Fatalf("attempt span is in the request's trace or has a parent: %+v", at.Parent)
		}
		linked := false
		for _, l := range at.Links {
			if l.SpanContext.TraceID() == traceID {
				if _, ok := byID[l.SpanContext.SpanID()]; !ok || byID[l.SpanContext.SpanID()].SpanContext.TraceID() != traceID {
					t.Fatalf("attempt links to span %s, not one of the request's", l.SpanContext.SpanID())
				}
				linked = true
			}
		}
		if !linked {
			t.Fatalf("attempt span %v does not link to the request's trace %s", at.Links, traceID)
		}
		if v, _ := attr(at, "platform.app_id"); v.AsInt64() != a.ID {
			t.Fatalf("attempt app %v, want %d", v.AsInt64(), a.ID)
		}
		posts := 0
		for _, s := range spans {
			if s.Parent.SpanID() == at.SpanContext.SpanID() && s.Name == "POST" && s.SpanKind == trace.SpanKindClient {
				if v, _ := attr(s, "http.response.status_code"); v.AsInt64() != http.StatusOK {
					t.Fatalf("POST span status %v, want 200", v.AsInt64())
				}
				if v, _ := attr(s, "server.address"); v.AsString() != "127.0.0.1" {
					t.Fatalf("POST span server.address %q", v.AsString())
				}
				posts++
			}
		}
		if posts != 1 {
			t.Fatalf("attempt has %d POST spans, want 1", posts)
		}
	}

	// The creation of the deliveries and the projections of the register's
	// events link to the request too.
	linkedBatch := map[string]bool{}
	for _, s := range spans {
		for _, l := range s.Links {
			if l.SpanContext.TraceID() == traceID && s.SpanKind == trace.SpanKindConsumer {
				linkedBatch[s.Name] = true
			}
		}
	}
	if !linkedBatch["pipeline webhook deliveries prepare"] || !linkedBatch["projection users"] {
		t.Fatalf("batch spans linked to the request: %v", linkedBatch)
	}

	// No span records a personal value of the request, a signature or a secret.
	personal := []string{"trace-u-1", "李雷", "韩梅梅", "13812345678", "li@example.cn", "110101199005010000", "1990-05-01", a.WebhookSecret, rcv.Srv.URL}
	for _, w := range got {
		personal = append(personal, w.Signature)
	}
	for _, s := range spans {
		for _, kv := range s.Attributes {
			for _, p := range personal {
				if p != "" && strings.Contains(kv.Value.String(), p) {
					t.Fatalf("span %q attribute %s carries %q", s.Name, kv.Key, p)
				}
			}
		}
		for _, p := range personal {
			if strings.Contains(s.Name, p) {
				t.Fatalf("span name %q carries %q", s.Name, p)
			}
		}
	}
}

func names(spans []tracetest.SpanStub) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name
	}
	return out
}

// TestTraceContextCrossesNodesThroughPostgres: a register on node A, whose
// webhook A cannot deliver (the receiver refuses until A has stopped), is
// delivered by node B, started afterwards on the same Postgres event store;
// B's attempt links to the trace of A's request, read from the log.
func TestTraceContextCrossesNodesThroughPostgres(t *testing.T) {
	exp := traced(t)
	db := harness.NodeDB(t)
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	cfg := func() node.Config {
		return node.Config{DataDir: t.TempDir(), EventStoreURL: db, PostgresURL: db, MasterKey: hex.EncodeToString(key),
			AdminToken: "adm_trace_test", WebhookAllowLoopback: true,
			WebhookSchedule: []time.Duration{time.Second, time.Second, time.Second, time.Second, time.Second}}
	}
	var open atomic.Bool // the receiver refuses every POST until node A has stopped
	delivered := make(chan string, 16)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Traceparent") != "" {
			t.Errorf("the receiver got traceparent %q", r.Header.Get("Traceparent"))
		}
		if !open.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
		delivered <- r.Header.Get("X-Webhook-Id")
	}))
	t.Cleanup(rcv.Close)

	nodeA := harness.Start(t, cfg())
	app := nodeA.CreateApp("partner")
	nodeA.ConfigureWebhook(app, rcv.URL+"/hooks", "user.family_member.*")
	res := app.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("trace-u-2"), http.StatusCreated, "0")
	reqID := res.Header.Get("X-Request-Id")
	// A tried (and was refused) before it stops, so the deliveries exist.
	waitSpans(t, exp, func(s []tracetest.SpanStub) bool {
		n := 0
		for _, sp := range s {
			if v, ok := attr(sp, "platform.webhook.outcome"); ok && v.AsString() == "retry" {
				n++
			}
		}
		return n >= 2
	})
	nodeA.Stop()
	open.Store(true)
	started := len(exp.GetSpans())

	harness.Start(t, cfg()) // node B
	for range 2 {
		select {
		case <-delivered:
		case <-time.After(harness.WaitBound):
			t.Fatal("node B did not deliver the webhooks")
		}
	}
	spans := waitSpans(t, exp, func(s []tracetest.SpanStub) bool { return len(deliveredAttempts(s)) >= 2 })
	traceID := requestSpan(t, spans, reqID).SpanContext.TraceID()
	for _, at := range deliveredAttempts(spans) {
		idx := -1
		for i, s := range spans {
			if s.SpanContext.Equal(at.SpanContext) {
				idx = i
			}
		}
		if idx < started {
			t.Fatalf("a delivered attempt ended before node B started")
		}
		linked := false
		for _, l := range at.Links {
			linked = linked || l.SpanContext.TraceID() == traceID
		}
		if !linked {
			t.Fatalf("node B's attempt (links %v) does not link to node A's request trace %s", at.Links, traceID)
		}
		if v, _ := attr(at, "platform.webhook.attempt"); v.AsInt64() < 2 {
			t.Fatalf("node B's delivered attempt is number %d, want a retry of A's", v.AsInt64())
		}
	}
}
