package bench_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/healthtech/partner-open-platform/internal/tracing"
)

// BenchmarkRegisterSerialHTTPTraced is BenchmarkRegisterSerialHTTP with
// tracing on: every span recorded (the SDK's default sampler) and handed
// to a batch exporter that keeps nothing, so the difference between the
// two is what tracing costs a register (docs/tracing.md).
func BenchmarkRegisterSerialHTTPTraced(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer tracing.Install(tp)()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	p, a := benchPlatform(b)
	var lat latencies
	measureCPU(b)
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		res := p.Send(a.Request("POST", "/open/v1/channel/users", map[string]any{"channel_user_id": fmt.Sprintf("traced-%d", i), "user": map[string]any{"name": "n", "phone": "13812345678"}}, start))
		if res.Status != http.StatusCreated {
			b.Fatalf("register: %d %s", res.Status, res.Raw)
		}
		lat.add(start)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "registers/s")
	lat.report(b)
}
