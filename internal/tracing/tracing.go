// Package tracing is the platform's OpenTelemetry tracing: off unless the
// process installs a tracer provider (FromEnv, from the standard OTEL_*
// variables; tests install one of their own). Every instrumented place
// asks Start for a span; while tracing is off Start is one atomic load and
// returns the caller's context unchanged with a span that records nothing,
// so an untraced request costs what it did before tracing existed
// (BenchmarkStartOff, BenchmarkRegister* with and without a provider).
//
// What spans carry is listed in docs/tracing.md: route templates, ids the
// access log already carries (app id, request id, delivery id), counts,
// positions and outcomes; never a path, a query, a header, a body, a
// stream name (it may name a person), a profile field or a key.
package tracing

import (
	"context"
	"net/http"
	"sync/atomic"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of every span the platform makes.
const ScopeName = "github.com/healthtech/partner-open-platform"

// current is the tracer in use; nil while tracing is off.
var current atomic.Pointer[tracerBox]

type tracerBox struct{ t trace.Tracer }

// off is the span Start returns while tracing is off: a value without
// state, so returning it allocates nothing.
var off trace.Span = noop.Span{}

// Install makes tp the provider of every span from now on (nil: tracing
// off) and returns what restores the previous one (for tests).
func Install(tp trace.TracerProvider) (restore func()) {
	var next *tracerBox
	if tp != nil {
		next = &tracerBox{t: tp.Tracer(ScopeName)}
	}
	prev := current.Swap(next)
	return func() { current.Store(prev) }
}

// On reports whether spans are recorded at all, so a caller can skip
// building a name or attributes nobody reads.
func On() bool { return current.Load() != nil }

// Start begins a span named name of kind under ctx's span. While tracing
// is off it returns ctx itself and a span that records nothing.
func Start(ctx context.Context, kind trace.SpanKind, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	b := current.Load()
	if b == nil {
		return ctx, off
	}
	return b.t.Start(ctx, name, append(opts, trace.WithSpanKind(kind))...)
}

// Traceparent is the W3C traceparent of ctx's span ("" when there is none
// or tracing is off): what an event records so that the work it causes
// later, on any node, can be linked to the request that wrote it.
func Traceparent(ctx context.Context) string {
	if current.Load() == nil {
		return ""
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return FormatTraceparent(sc)
}

// FormatTraceparent writes sc as a version-00 traceparent.
func FormatTraceparent(sc trace.SpanContext) string {
	tid, sid := sc.TraceID(), sc.SpanID()
	b := make([]byte, 0, 55)
	b = append(b, "00-"...)
	b = appendHex(b, tid[:])
	b = append(b, '-')
	b = appendHex(b, sid[:])
	b = append(b, '-')
	return string(appendHex(b, []byte{byte(sc.TraceFlags())}))
}

func appendHex(b, src []byte) []byte {
	const digits = "0123456789abcdef"
	for _, c := range src {
		b = append(b, digits[c>>4], digits[c&0x0f])
	}
	return b
}

// ParseTraceparent reads a traceparent as FormatTraceparent writes it (and
// any later version's first four fields, as the W3C recommendation asks);
// ok is false for anything else, which then links to nothing.
func ParseTraceparent(s string) (trace.SpanContext, bool) {
	if len(s) < 55 || (len(s) > 55 && (s[0:2] == "00" || s[55] != '-')) || s[2] != '-' || s[35] != '-' || s[52] != '-' || s[0:2] == "ff" {
		return trace.SpanContext{}, false
	}
	tid, err := trace.TraceIDFromHex(s[3:35])
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(s[36:52])
	if err != nil {
		return trace.SpanContext{}, false
	}
	var flags [1]byte
	if !unhex(s[53:55], flags[:]) {
		return trace.SpanContext{}, false
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags[0]) & trace.FlagsSampled, Remote: true})
	return sc, sc.IsValid()
}

func unhex(s string, dst []byte) bool {
	val := func(c byte) (byte, bool) {
		switch {
		case c >= '0' && c <= '9':
			return c - '0', true
		case c >= 'a' && c <= 'f':
			return c - 'a' + 10, true
		}
		return 0, false
	}
	for i := range dst {
		hi, ok1 := val(s[2*i])
		lo, ok2 := val(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

// incoming reads a caller's W3C trace context from request headers.
var incoming = propagation.TraceContext{}

// CallerContext is the span context a request's traceparent header names
// (invalid when it names none): a partner's own trace, which the request's
// span links to rather than joins (a public API does not let callers
// choose its trace ids or sampling).
func CallerContext(h http.Header) trace.SpanContext {
	if h.Get("Traceparent") == "" {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(incoming.Extract(context.Background(), propagation.HeaderCarrier(h)))
}

// Category is the kind of a stream ("user" of "user-42", "delivery" of
// "delivery-…"): what a span may say about which stream it wrote, since
// the rest of a stream's name can identify a person.
func Category(stream string) string {
	for i := 0; i < len(stream); i++ {
		if stream[i] == '-' {
			return stream[:i]
		}
	}
	return stream
}
