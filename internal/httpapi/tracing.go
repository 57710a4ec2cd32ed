package httpapi

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/healthtech/partner-open-platform/internal/tracing"
)

// startServerSpan begins the request's server span, named "METHOD route"
// after the route template (never the path, which holds ids). A caller's
// own traceparent is linked, not joined: a public API keeps its trace ids
// and sampling its own. While tracing is off it returns the request's
// context and a span that records nothing, allocating nothing.
func startServerSpan(r *http.Request, method, route string) (context.Context, trace.Span) {
	if !tracing.On() {
		return r.Context(), trace.SpanFromContext(context.Background())
	}
	opts := []trace.SpanStartOption{trace.WithAttributes(
		attribute.String("http.request.method", method),
		attribute.String("http.route", route),
	)}
	if caller := tracing.CallerContext(r.Header); caller.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: caller}))
	}
	return tracing.Start(r.Context(), trace.SpanKindServer, method+" "+route, opts...)
}

// endServerSpan records what the access line says of the request (status,
// request id, the calling app's id, the error code) and ends the span; a
// 5xx is an error of the span.
func endServerSpan(span trace.Span, status int, requestID string, note *Note) {
	if !span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 4)
	attrs = append(attrs, attribute.Int("http.response.status_code", status), attribute.String("platform.request_id", requestID))
	if note.AppID != 0 {
		attrs = append(attrs, attribute.Int64("platform.app_id", note.AppID))
	}
	if note.Code != "" {
		attrs = append(attrs, attribute.String("platform.error_code", note.Code))
	}
	span.SetAttributes(attrs...)
	if status >= 500 {
		span.SetStatus(otelcodes.Error, "")
	}
	span.End()
}
