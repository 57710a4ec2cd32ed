package subscribe

import (
	"bytes"
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/tracing"
)

// maxBatchLinks bounds the links of one batch's span to the requests that
// wrote its events: enough to find them from a small batch, bounded for a
// replay's batches of hundreds.
const maxBatchLinks = 32

// startProjection begins the span of one batch a projection applies,
// linked to the traces of the requests that wrote its first events. nil
// while tracing is off.
func startProjection(ctx context.Context, name string, batch []events.Envelope) (context.Context, trace.Span) {
	if !tracing.On() {
		return ctx, nil
	}
	return startBatch(ctx, "projection "+name, len(batch), envelopeTraces(batch))
}

// startStage begins the span of one stage ("prepare", "commit") of a
// pipeline's batch, linked as startProjection's. nil while tracing is off.
func startStage(ctx context.Context, pipeline, stage string, n int, batch []events.Recorded) (context.Context, trace.Span) {
	if !tracing.On() {
		return ctx, nil
	}
	var traces func(func(string) bool)
	if batch != nil {
		traces = recordedTraces(batch)
	}
	return startBatch(ctx, "pipeline "+pipeline+" "+stage, n, traces)
}

func startBatch(ctx context.Context, name string, n int, traceparents func(yield func(string) bool)) (context.Context, trace.Span) {
	var links []trace.Link
	if traceparents != nil {
		seen := map[string]bool{}
		traceparents(func(tp string) bool {
			if tp == "" || seen[tp] {
				return true
			}
			seen[tp] = true
			if sc, ok := tracing.ParseTraceparent(tp); ok {
				links = append(links, trace.Link{SpanContext: sc})
			}
			return len(links) < maxBatchLinks
		})
	}
	return tracing.Start(ctx, trace.SpanKindConsumer, name,
		trace.WithAttributes(attribute.Int("platform.batch.events", n)), trace.WithLinks(links...))
}

// endBatch ends a batch's span with the position it reached or its failure.
func endBatch(span trace.Span, pos events.Position, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.SetStatus(codes.Error, "batch failed")
	} else if !pos.IsZero() {
		span.SetAttributes(attribute.String("platform.position", pos.String()))
	}
	span.End()
}

// envelopeTraces yields the trace context each envelope's metadata names.
func envelopeTraces(batch []events.Envelope) func(func(string) bool) {
	return func(yield func(string) bool) {
		for _, env := range batch {
			if !yield(env.Metadata.Traceparent) {
				return
			}
		}
	}
}

// recordedTraces yields the trace context in each event's raw metadata,
// read without decoding it (a traceparent holds no escapes).
func recordedTraces(batch []events.Recorded) func(func(string) bool) {
	key := []byte(`"traceparent":"`)
	return func(yield func(string) bool) {
		for _, rec := range batch {
			tp := ""
			if i := bytes.Index(rec.Meta, key); i >= 0 {
				rest := rec.Meta[i+len(key):]
				if j := bytes.IndexByte(rest, '"'); j >= 0 {
					tp = string(rest[:j])
				}
			}
			if !yield(tp) {
				return
			}
		}
	}
}
