package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/airlock-dev/airlock/schema"
)

// Config is [telemetry].
type Config struct {
	// OTLPEndpoint is the base URL of an OTLP/HTTP receiver ("http://127.0.0.1:4318");
	// spans are posted to its /v1/traces. Empty: the OTEL_* variables decide.
	OTLPEndpoint string `toml:"otlp_endpoint"`
	// ServiceName is service.name on every span (default "airlock").
	ServiceName string `toml:"service_name"`
}

// DefaultServiceName is service.name when the config names none.
const DefaultServiceName = "airlock"

// Validate checks the endpoint is an http or https URL with a host.
func (c Config) Validate() error {
	if c.OTLPEndpoint == "" {
		return nil
	}
	u, err := url.Parse(c.OTLPEndpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &schema.FieldError{Section: "telemetry", Field: "otlp_endpoint", Message: fmt.Sprintf("%q is not an http:// or https:// URL with a host (e.g. \"http://127.0.0.1:4318\")", c.OTLPEndpoint)}
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return &schema.FieldError{Section: "telemetry", Field: "otlp_endpoint", Message: "a base URL without query or fragment; spans go to its /v1/traces"}
	}
	return nil
}

// Provider makes the engine's tracers. A nil *Provider is valid and off.
type Provider struct {
	tp *sdktrace.TracerProvider
}

// New starts exporting when the config or the environment asks for it, and returns nil
// (off) otherwise.
func New(ctx context.Context, c Config) (*Provider, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if !enabled(c) {
		return nil, nil
	}
	if p := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"); p != "" && p != "http/protobuf" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=%q: only http/protobuf is supported", p)
	}
	if p := os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"); p != "" && p != "http/protobuf" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") == "" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: only http/protobuf is supported", p)
	}
	var opts []otlptracehttp.Option
	if c.OTLPEndpoint != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimSuffix(c.OTLPEndpoint, "/")+"/v1/traces"))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP exporter: %w", err)
	}
	name := c.ServiceName
	if name == "" {
		name = DefaultServiceName
	}
	res := resource.NewSchemaless(semconv.ServiceName(name))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Second)),
		sdktrace.WithResource(res),
	)
	return &Provider{tp: tp}, nil
}

// enabled says whether traces are asked for.
func enabled(c Config) bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || os.Getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return c.OTLPEndpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// Tracer returns the named tracer, a no-op one when p is off.
func (p *Provider) Tracer(name string) trace.Tracer {
	if p == nil {
		return noop.NewTracerProvider().Tracer(name)
	}
	return p.tp.Tracer(name)
}

// Shutdown sends what is buffered and stops. Safe on nil.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	if err := p.tp.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("telemetry: %w", err)
	}
	return nil
}

var traceContext = propagation.TraceContext{}

// FromHeaders continues the trace of an HTTP request's traceparent (and tracestate).
func FromHeaders(ctx context.Context, h http.Header) context.Context {
	return traceContext.Extract(ctx, propagation.HeaderCarrier(h))
}

// FromMeta continues the trace an MCP request names in params._meta.traceparent (SEP-414).
func FromMeta(ctx context.Context, meta map[string]any) context.Context {
	c := propagation.MapCarrier{}
	for _, k := range traceContext.Fields() {
		if v, ok := meta[k].(string); ok {
			c[k] = v
		}
	}
	if len(c) == 0 {
		return ctx
	}
	return traceContext.Extract(ctx, c)
}
