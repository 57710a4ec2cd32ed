package webhooks

import (
	"context"
	"net/url"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/healthtech/partner-open-platform/internal/tracing"
)

// An attempt's span is the root of a trace of its own, linked to the span
// of the request whose event caused the delivery (the trace context its
// creation recorded), not a child of it: the request answered before the
// delivery existed, and its attempts may come minutes or hours later, be
// retried, resent by an operator, or sent by another node, so each is
// work of its own that the request's trace should not stretch to cover.
// The POST is a client span under it. The partner's receiver gets no
// traceparent header: the platform's trace ids are its own, and a
// receiver has nothing to join them to (docs/tracing.md).

// startAttempt begins the span of one attempt of delivery id. nil while
// tracing is off.
func startAttempt(ctx context.Context, id string) (context.Context, trace.Span) {
	if !tracing.On() {
		return ctx, nil
	}
	return tracing.Start(ctx, trace.SpanKindInternal, "webhook attempt",
		trace.WithAttributes(attribute.String("platform.delivery_id", id)))
}

// describeAttempt adds what the loaded delivery says: its app, endpoint
// and event type, and the link to the request behind it.
func describeAttempt(span trace.Span, del *delivery) {
	if span == nil {
		return
	}
	span.SetAttributes(
		attribute.Int64("platform.app_id", del.created.AppID),
		attribute.Int64("platform.endpoint_id", del.created.EndpointID),
		attribute.String("platform.webhook.event", del.created.Event),
	)
	if sc, ok := tracing.ParseTraceparent(del.traceparent); ok {
		span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("platform.link", "caused_by")}})
	}
}

// endAttempt ends an attempt's span with its outcome ("" when nothing was
// sent: not due, suspended, erased, or the delivery failed to load).
func endAttempt(span trace.Span, attempt int, outcome, errorClass string, status int) {
	if span == nil {
		return
	}
	if outcome == "" {
		span.SetAttributes(attribute.String("platform.webhook.outcome", "not_sent"))
	} else {
		span.SetAttributes(attribute.Int("platform.webhook.attempt", attempt), attribute.String("platform.webhook.outcome", outcome))
		if status != 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", status))
		}
		if errorClass != "" {
			span.SetAttributes(attribute.String("error.type", errorClass))
		}
	}
	span.End()
}

// startPost begins the client span of the POST to the endpoint: its host
// and port only (a path or query may carry a partner's token). nil while
// tracing is off.
func startPost(ctx context.Context, target string) (context.Context, trace.Span) {
	if !tracing.On() {
		return ctx, nil
	}
	attrs := []attribute.KeyValue{attribute.String("http.request.method", "POST")}
	if u, err := url.Parse(target); err == nil {
		host, port := u.Hostname(), u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		attrs = append(attrs, attribute.String("server.address", host))
		if n, err := strconv.Atoi(port); err == nil {
			attrs = append(attrs, attribute.Int("server.port", n))
		}
	}
	return tracing.Start(ctx, trace.SpanKindClient, "POST", trace.WithAttributes(attrs...))
}

// endPost ends the POST's span with the receiver's status, or the class of
// the failure (never its text: it may echo the URL).
func endPost(span trace.Span, r result) {
	if span == nil {
		return
	}
	if r.statusCode != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", r.statusCode))
	}
	if r.err != "" || r.statusCode >= 400 {
		class := r.class
		if class == "" {
			class = strconv.Itoa(r.statusCode)
		}
		span.SetAttributes(attribute.String("error.type", class))
		span.SetStatus(codes.Error, "")
	}
	span.End()
}
