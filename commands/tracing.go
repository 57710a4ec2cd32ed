package commands

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/tracing"
)

// traced is meta with the trace context of ctx's span, unless it already
// names one (a batched request's own): the events it writes then link the
// work they cause later (webhook attempts) to the request.
func (m Meta) traced(ctx context.Context) Meta {
	if m.Traceparent == "" {
		m.Traceparent = tracing.Traceparent(ctx)
	}
	return m
}

// commandNames caches the span name of each command's call site.
var commandNames sync.Map // program counter → string

// startCommand begins the span of one command the shell runs, named after
// the command (the method that called the shell, skip frames above
// startCommand's caller): "command Users.Register". While tracing is off
// it costs one atomic load.
func startCommand(ctx context.Context, skip int, stream string) (context.Context, trace.Span) {
	if !tracing.On() {
		return ctx, trace.SpanFromContext(context.Background())
	}
	name := "command"
	var pcs [1]uintptr
	if runtime.Callers(skip+2, pcs[:]) == 1 {
		if v, ok := commandNames.Load(pcs[0]); ok {
			name = v.(string)
		} else {
			frame, _ := runtime.CallersFrames(pcs[:]).Next()
			name = "command " + commandName(frame.Function)
			commandNames.Store(pcs[0], name)
		}
	}
	ctx, span := tracing.Start(ctx, trace.SpanKindInternal, name)
	if stream != "" {
		span.SetAttributes(attribute.String("platform.stream.category", tracing.Category(stream)))
	}
	return ctx, span
}

// commandName is "Users.Register" of
// ".../commands.(*Users).Register.func1".
func commandName(fn string) string {
	if i := strings.LastIndexByte(fn, '/'); i >= 0 {
		fn = fn[i+1:]
	}
	fn = strings.TrimPrefix(fn, "commands.")
	fn = strings.NewReplacer("(*", "", ")", "", "[...]", "").Replace(fn)
	parts := strings.Split(fn, ".")
	for len(parts) > 1 && (strings.HasPrefix(parts[len(parts)-1], "func") || isDigits(parts[len(parts)-1])) {
		parts = parts[:len(parts)-1]
	}
	return strings.Join(parts, ".")
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// endCommand records how the command ended: conflicts retried, and an
// outcome that names no value (a refusal is the command's answer, not a
// failure of the platform; a store failure or contention is). A command's
// error text is never recorded: it may name a stream, which may name a person.
func endCommand(span trace.Span, conflicts int, loadFailed bool, err error) {
	if !span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 2)
	if conflicts > 0 {
		attrs = append(attrs, attribute.Int("platform.command.conflicts", conflicts))
	}
	var ae *appendError
	switch {
	case err == nil:
		attrs = append(attrs, attribute.String("platform.command.outcome", "done"))
	case loadFailed:
		attrs = append(attrs, attribute.String("platform.command.outcome", "store_error"))
		span.SetStatus(codes.Error, "event store read failed")
	case errors.As(err, &ae):
		attrs = append(attrs, attribute.String("platform.command.outcome", "store_error"))
		span.SetStatus(codes.Error, "event store append failed")
	case errors.Is(err, domain.ErrContention):
		attrs = append(attrs, attribute.String("platform.command.outcome", "contention"))
		span.SetStatus(codes.Error, "too many conflicting writers")
	case events.IsConflict(err):
		attrs = append(attrs, attribute.String("platform.command.outcome", "conflict"))
	default:
		// The decision's answer (a refusal such as a missing user), or
		// what its own reads met: the request's span has the status.
		attrs = append(attrs, attribute.String("platform.command.outcome", "answered"))
	}
	span.SetAttributes(attrs...)
	span.End()
}
