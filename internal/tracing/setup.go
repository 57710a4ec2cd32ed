package tracing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// DefaultServiceName names the platform's spans when OTEL_SERVICE_NAME
// (or service.name in OTEL_RESOURCE_ATTRIBUTES) does not.
const DefaultServiceName = "partner-open-platform"

// ShutdownTimeout bounds how long Shutdown waits for the last spans to be
// exported, so an unreachable collector never holds up a stopping node.
const ShutdownTimeout = 5 * time.Second

// Exporter is where spans go, from OTEL_TRACES_EXPORTER.
type Exporter string

// The exporters FromEnv builds.
const (
	ExporterNone    Exporter = "none"
	ExporterOTLP    Exporter = "otlp"
	ExporterConsole Exporter = "console"
)

// ExporterFrom is the exporter the environment asks for. The standard
// default of OTEL_TRACES_EXPORTER is otlp, but tracing is off unless asked
// for: unset means otlp only when an OTLP endpoint is set
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT),
// none otherwise; OTEL_SDK_DISABLED=true means none whatever else is set.
func ExporterFrom(getenv func(string) string) (Exporter, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return ExporterNone, nil
	}
	v := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	if v == "" {
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
			return ExporterOTLP, nil
		}
		return ExporterNone, nil
	}
	switch e := Exporter(strings.ToLower(v)); e {
	case ExporterNone, ExporterOTLP, ExporterConsole:
		return e, nil
	}
	return "", fmt.Errorf("OTEL_TRACES_EXPORTER %q: want otlp, console or none (one exporter)", v)
}

// ProtocolFrom is the OTLP protocol the environment asks for:
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL,
// else http/protobuf. http/json is refused: the Go exporter does not speak it.
func ProtocolFrom(getenv func(string) string) (string, error) {
	v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
	if v == "" {
		v = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	switch v {
	case "":
		return "http/protobuf", nil
	case "http/protobuf", "grpc":
		return v, nil
	}
	return "", fmt.Errorf("OTLP protocol %q: want http/protobuf or grpc", v)
}

// Provider is an installed tracer provider from FromEnv.
type Provider struct {
	tp       *sdktrace.TracerProvider
	restore  func()
	Exporter Exporter
	Protocol string // the OTLP protocol; "" for another exporter
}

// Shutdown exports what is buffered, within ShutdownTimeout at most, and
// turns tracing off. A nil Provider (tracing off) has nothing to do.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	p.restore()
	ctx, cancel := context.WithTimeout(ctx, ShutdownTimeout)
	defer cancel()
	return p.tp.Shutdown(ctx)
}

// FromEnv builds the tracer provider the standard OTEL_* variables
// describe and installs it, or returns nil when they leave tracing off.
// What the exporters and the SDK read themselves (endpoints, headers,
// timeouts, compression, OTEL_TRACES_SAMPLER and its argument,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME, OTEL_BSP_*) they read from
// the process environment. console writes spans to stdout.
func FromEnv(ctx context.Context, getenv func(string) string, version string) (*Provider, error) {
	exp, err := ExporterFrom(getenv)
	if err != nil || exp == ExporterNone {
		return nil, err
	}
	p := &Provider{Exporter: exp}
	var exporter sdktrace.SpanExporter
	switch exp {
	case ExporterConsole:
		exporter, err = stdouttrace.New(stdouttrace.WithWriter(io.Writer(os.Stdout)))
	default:
		if p.Protocol, err = ProtocolFrom(getenv); err != nil {
			return nil, err
		}
		if p.Protocol == "grpc" {
			exporter, err = otlptracegrpc.New(ctx)
		} else {
			exporter, err = otlptracehttp.New(ctx)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("trace exporter %s: %w", exp, err)
	}
	res, err := Resource(ctx, version)
	if err != nil {
		_ = exporter.Shutdown(ctx)
		return nil, err
	}
	// The sampler is the SDK's reading of OTEL_TRACES_SAMPLER (default
	// parentbased_always_on); the batch processor reads OTEL_BSP_*.
	p.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	p.restore = Install(p.tp)
	return p, nil
}

// Resource describes this process: service.name from OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES (default DefaultServiceName), service.version,
// the SDK, and the rest of OTEL_RESOURCE_ATTRIBUTES.
func Resource(ctx context.Context, version string) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{attribute.String("service.name", DefaultServiceName)}
	if version != "" {
		attrs = append(attrs, attribute.String("service.version", version))
	}
	base := resource.NewSchemaless(attrs...)
	env, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	return resource.Merge(base, env)
}
