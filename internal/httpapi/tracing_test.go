package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/healthtech/partner-open-platform/internal/tracing"
)

// TestServerSpanOffAllocatesNothing: while tracing is off the request's
// span costs no allocation and leaves its context as it was.
func TestServerSpanOffAllocatesNothing(t *testing.T) {
	r := httptest.NewRequest("POST", "/v1/x", nil)
	n := &Note{AppID: 1}
	allocs := testing.AllocsPerRun(100, func() {
		ctx, span := startServerSpan(r, "POST", "/v1/x")
		if ctx != r.Context() {
			t.Fatal("context changed")
		}
		endServerSpan(span, 200, "id", n)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per request while tracing is off", allocs)
	}
}

// BenchmarkInstrument is one request through Instrument to a handler that
// answers 204: "off" is the platform's default, "on" records every span
// (always-on sampler) into an exporter that keeps nothing.
func BenchmarkInstrument(b *testing.B) {
	h := Instrument(slog.New(NewTextLogHandler(io.Discard)), "/v1/things/:id", nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	run := func(b *testing.B) {
		r := httptest.NewRequest("GET", "/v1/things/1", nil)
		b.ReportAllocs()
		for b.Loop() {
			h.ServeHTTP(httptest.NewRecorder(), r)
		}
	}
	b.Run("off", run)
	b.Run("on", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(tracetest.NewNoopExporter())))
		defer tracing.Install(tp)()
		defer func() { _ = tp.Shutdown(context.Background()) }()
		run(b)
	})
}
