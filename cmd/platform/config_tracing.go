package main

import (
	"errors"
	"net/url"
	"strconv"
	"strings"

	"github.com/healthtech/partner-open-platform/internal/tracing"
)

// tracingSettings are the standard OpenTelemetry variables the platform
// reads for its traces (docs/tracing.md), checked at start like every
// other setting so that a typo fails the start and not silently the
// traces. Environment only: their names are the standard's. What the SDK
// reads besides (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION,
// OTEL_BSP_*) it reads unchecked, and headers, which may hold a
// collector's credentials, are never logged. The rows come in three
// groups, in the order the docs and -help list them.
func (c *config) tracingSettings() []*setting {
	if c.Tracing == nil {
		c.Tracing = map[string]string{}
	}
	rows := c.otelExportSettings()
	rows = append(rows, c.otelResourceSettings()...)
	return append(rows, c.otelSamplingSettings()...)
}

// otelExportSettings say whether spans leave the node, and how and where.
func (c *config) otelExportSettings() []*setting {
	return []*setting{
		{env: "OTEL_SDK_DISABLED",
			usage:   "true turns tracing off whatever the other OTEL_* variables say",
			accepts: "true or false",
			parse:   c.keepOTEL("OTEL_SDK_DISABLED", checkTrueFalse),
			show:    c.shownOTEL("OTEL_SDK_DISABLED", "false")},
		{env: "OTEL_TRACES_EXPORTER",
			usage:   "where spans go: otlp (an OpenTelemetry collector, Jaeger, Tempo), console (stdout) or none; unset: otlp when an OTLP endpoint is set, none (tracing off) otherwise",
			accepts: "otlp, console or none",
			parse:   c.keepOTEL("OTEL_TRACES_EXPORTER", checkExporter),
			show:    c.shownExporter},
		{env: "OTEL_EXPORTER_OTLP_ENDPOINT",
			usage:   "the OTLP receiver's base URL (http/protobuf: /v1/traces is appended); unset: http://localhost:4318 (grpc: :4317) when the exporter is otlp",
			accepts: "an http or https URL",
			parse:   c.keepOTEL("OTEL_EXPORTER_OTLP_ENDPOINT", checkHTTPURL),
			show:    c.shownEndpoint("OTEL_EXPORTER_OTLP_ENDPOINT")},
		{env: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
			usage:   "the OTLP receiver's URL for traces, used as it is; wins over OTEL_EXPORTER_OTLP_ENDPOINT",
			accepts: "an http or https URL",
			parse:   c.keepOTEL("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", checkHTTPURL),
			show:    c.shownEndpoint("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")},
		{env: "OTEL_EXPORTER_OTLP_PROTOCOL", def: "",
			usage:   "the OTLP transport (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL wins over it); unset: http/protobuf",
			accepts: "http/protobuf or grpc",
			parse:   c.keepOTEL("OTEL_EXPORTER_OTLP_PROTOCOL", checkProtocol),
			show:    c.shownOTEL("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")},
	}
}

// otelResourceSettings name the service the spans come from.
func (c *config) otelResourceSettings() []*setting {
	return []*setting{
		{env: "OTEL_SERVICE_NAME",
			usage:   "service.name of every span (wins over service.name in OTEL_RESOURCE_ATTRIBUTES); unset: " + tracing.DefaultServiceName,
			accepts: "any name",
			parse:   c.keepOTEL("OTEL_SERVICE_NAME", nil),
			show:    c.shownOTEL("OTEL_SERVICE_NAME", tracing.DefaultServiceName)},
		{env: "OTEL_RESOURCE_ATTRIBUTES",
			usage:   "more resource attributes of every span, such as deployment.environment.name=prod,k8s.pod.name=...",
			accepts: "comma-separated key=value pairs (values percent-encoded)",
			parse:   c.keepOTEL("OTEL_RESOURCE_ATTRIBUTES", checkResourceAttributes),
			show:    c.shownOTEL("OTEL_RESOURCE_ATTRIBUTES", "")},
	}
}

// otelSamplingSettings choose which traces are recorded.
func (c *config) otelSamplingSettings() []*setting {
	return []*setting{
		{env: "OTEL_TRACES_SAMPLER",
			usage:   "which traces are recorded; unset: parentbased_always_on (every request's trace, since a request's span is always a root)",
			accepts: "always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio",
			parse:   c.keepOTEL("OTEL_TRACES_SAMPLER", checkSampler),
			show:    c.shownOTEL("OTEL_TRACES_SAMPLER", "parentbased_always_on")},
		{env: "OTEL_TRACES_SAMPLER_ARG",
			usage:   "the fraction of traces a traceidratio sampler records; unset: 1",
			accepts: "a number from 0 to 1",
			parse:   c.keepOTEL("OTEL_TRACES_SAMPLER_ARG", checkRatio),
			show:    c.shownOTEL("OTEL_TRACES_SAMPLER_ARG", "")},
	}
}

// keepOTEL checks a value (when check is not nil) and keeps it in
// c.Tracing under its variable's name, for the tracing SDK.
func (c *config) keepOTEL(env string, check func(string) error) func(string) error {
	return func(s string) error {
		if check != nil {
			if err := check(s); err != nil {
				return err
			}
		}
		c.Tracing[env] = s
		return nil
	}
}

// shownOTEL shows a variable's value, or what unset means.
func (c *config) shownOTEL(env, unset string) func() string {
	return func() string {
		if v := c.Tracing[env]; v != "" {
			return v
		}
		return unset
	}
}

// shownExporter shows the exporter the SDK will use, from all the
// variables that decide it.
func (c *config) shownExporter() string {
	e, err := tracing.ExporterFrom(func(k string) string { return c.Tracing[k] })
	if err != nil || e == tracing.ExporterNone {
		return "none (tracing off)"
	}
	return string(e)
}

// shownEndpoint shows an endpoint without the credentials a URL may hold.
func (c *config) shownEndpoint(env string) func() string {
	return func() string {
		v := c.Tracing[env]
		if u, err := url.Parse(v); err == nil && u.User != nil {
			u.User = nil // credentials in a URL are never logged
			return u.String()
		}
		return v
	}
}

func checkTrueFalse(s string) error {
	if !strings.EqualFold(s, "true") && !strings.EqualFold(s, "false") {
		return errors.New("not true or false")
	}
	return nil
}

// checkExporter asks the tracing package, so that the check and the SDK's
// reading never disagree.
func checkExporter(s string) error {
	_, err := tracing.ExporterFrom(only("OTEL_TRACES_EXPORTER", s))
	return err
}

func checkProtocol(s string) error {
	_, err := tracing.ProtocolFrom(only("OTEL_EXPORTER_OTLP_PROTOCOL", s))
	return err
}

// only is an environment holding one variable.
func only(env, value string) func(string) string {
	return func(k string) string {
		if k == env {
			return value
		}
		return ""
	}
}

func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("not an http(s) URL")
	}
	return nil
}

func checkResourceAttributes(s string) error {
	for _, kv := range strings.Split(s, ",") {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return errors.New("not a list of key=value")
		}
	}
	return nil
}

func checkSampler(s string) error {
	switch s {
	case "always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio":
		return nil
	}
	return errors.New("not a sampler the SDK knows")
}

func checkRatio(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f > 1 {
		return errors.New("not a number from 0 to 1")
	}
	return nil
}
