// Package tracing gives the engine its own OpenTelemetry traces: a tracer
// provider exporting by OTLP/HTTP to the configured collector (or a no-op
// one when tracing is off), W3C trace-context propagation for the places a
// step's context crosses (HTTP headers, WebSocket frames, the notification
// log, webhook requests), and a log handler that adds trace and span ids to
// every record logged with a traced context.
//
// Only adapters import OpenTelemetry: a use case receives the span in its
// context and passes the context on; where a step's context must outlive
// the request (a notification pushed later, perhaps by another replica) it
// travels as a W3C traceparent string on the record.
package tracing

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Options configure a Provider; an empty Endpoint makes a no-op one.
type Options struct {
	// Endpoint is the collector's OTLP/HTTP base URL or its full traces URL.
	Endpoint string
	Headers  map[string]string
	// SampleRatio is the share of root traces recorded (a caller's sampled
	// flag decides for the traces it continues).
	SampleRatio    float64
	ServiceName    string
	ServiceVersion string
	// InstanceID names this replica (service.instance.id).
	InstanceID string
	// BatchTimeout is how long spans wait before being exported (default
	// 5 s; tests shorten it).
	BatchTimeout time.Duration
}

// Provider hands out the engine's tracers.
type Provider struct {
	tp  trace.TracerProvider
	sdk *sdktrace.TracerProvider
}

// Off is a provider whose spans record nothing. A caller's trace context
// still flows through it (its ids reach the logs).
func Off() *Provider { return &Provider{tp: noop.NewTracerProvider()} }

// New builds the exporting provider, or Off without an endpoint. The
// exporter connects lazily: an unreachable collector costs dropped spans
// (and a logged export error), never a failed start.
func New(ctx context.Context, o Options) (*Provider, error) {
	if o.Endpoint == "" {
		return Off(), nil
	}
	endpoint, err := tracesURL(o.Endpoint)
	if err != nil {
		return nil, err
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(endpoint)}
	if len(o.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(o.Headers))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, err
	}
	attrs := []attribute.KeyValue{semconv.ServiceName(o.ServiceName)}
	if o.ServiceVersion != "" {
		attrs = append(attrs, semconv.ServiceVersion(o.ServiceVersion))
	}
	if o.InstanceID != "" {
		attrs = append(attrs, semconv.ServiceInstanceID(o.InstanceID))
	}
	res, err := resource.Merge(resource.Default(), resource.NewWithAttributes(semconv.SchemaURL, attrs...))
	if err != nil {
		return nil, err
	}
	batch := []sdktrace.BatchSpanProcessorOption{}
	if o.BatchTimeout > 0 {
		batch = append(batch, sdktrace.WithBatchTimeout(o.BatchTimeout))
	}
	// Attribute values come from requests (ids, step names): bound them.
	limits := sdktrace.NewSpanLimits()
	limits.AttributeValueLengthLimit = 512
	sdk := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, batch...),
		sdktrace.WithRawSpanLimits(limits),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(o.SampleRatio))),
	)
	return &Provider{tp: sdk, sdk: sdk}, nil
}

// tracesURL is the OTLP/HTTP traces URL of endpoint: a base URL gets the
// standard /v1/traces path, a URL with a path is used as given.
func tracesURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errors.New("tracing: the endpoint must be an http(s) URL")
	}
	if strings.Trim(u.Path, "/") == "" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

// TracerProvider is what adapters take their tracer from (never nil).
func (p *Provider) TracerProvider() trace.TracerProvider {
	if p == nil || p.tp == nil {
		return noop.NewTracerProvider()
	}
	return p.tp
}

// Enabled reports whether spans are exported.
func (p *Provider) Enabled() bool { return p != nil && p.sdk != nil }

// Shutdown exports the spans still buffered and stops the exporter.
func (p *Provider) Shutdown(ctx context.Context) error {
	if !p.Enabled() {
		return nil
	}
	return p.sdk.Shutdown(ctx)
}

// Tracer is tp's tracer for the adapter named name, or a no-op one when tp
// is nil (an adapter built without tracing).
func Tracer(tp trace.TracerProvider, name string) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer("github.com/threadengine/engine/adapters/" + name)
}

// Flush exports the spans ended so far (tests; a shutdown flushes too).
func (p *Provider) Flush(ctx context.Context) error {
	if !p.Enabled() {
		return nil
	}
	return p.sdk.ForceFlush(ctx)
}
