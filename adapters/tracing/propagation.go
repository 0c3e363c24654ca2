package tracing

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// w3c is the one propagation format: W3C Trace Context (traceparent and
// tracestate), what OpenTelemetry SDKs, Jaeger and Tempo clients send.
var w3c = propagation.TraceContext{}

// FromHeaders continues the trace an HTTP request's traceparent names.
func FromHeaders(ctx context.Context, h http.Header) context.Context {
	return w3c.Extract(ctx, propagation.HeaderCarrier(h))
}

// InjectHeaders adds ctx's span as traceparent to an outgoing request.
func InjectHeaders(ctx context.Context, h http.Header) {
	w3c.Inject(ctx, propagation.HeaderCarrier(h))
}

// WithParent continues the trace traceparent (a W3C header value) names;
// ctx is returned unchanged when traceparent is empty or malformed.
func WithParent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return w3c.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// WithParentIDs continues a trace named by hexadecimal trace and span ids
// (the otel_trace_id and otel_span_id refs the Threadify SDKs' span
// exporters record); ctx is returned unchanged when either is malformed.
func WithParentIDs(ctx context.Context, traceID, spanID string) context.Context {
	tid, err1 := trace.TraceIDFromHex(traceID)
	sid, err2 := trace.SpanIDFromHex(spanID)
	if err1 != nil || err2 != nil {
		return ctx
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

// TraceParent is ctx's span as a W3C traceparent value, "" when ctx holds
// no valid span context. It is what a record carries so that work done
// later, elsewhere, joins the trace.
func TraceParent(ctx context.Context) string {
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	return c["traceparent"]
}

// End ends span with err's outcome: an error status and the code when err
// is not nil (code "" for an error without a public code).
func End(span trace.Span, code string, err error) {
	if err != nil {
		msg := code
		if msg == "" {
			msg = err.Error()
		}
		span.SetStatus(codes.Error, msg)
		if code != "" {
			span.SetAttributes(AttrErrorCode.String(code))
		}
	}
	span.End()
}
