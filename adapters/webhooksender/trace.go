package webhooksender

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/threadengine/engine/adapters/tracing"
	"github.com/threadengine/engine/ports"
)

// SetTracer traces every request with tp's tracer: a client span "webhook
// POST" in the trace of the step that raised the alert, whose traceparent
// the request carries to the receiver. Call it before sending.
func (s *Sender) SetTracer(tp trace.TracerProvider) { s.tracer = tracing.Tracer(tp, "webhooksender") }

// startSpan opens the request's span and adds its traceparent to req.
func (s *Sender) startSpan(ctx context.Context, r ports.WebhookRequest, req *http.Request) trace.Span {
	tracer := s.tracer
	if tracer == nil {
		tracer = tracing.Tracer(nil, "webhooksender")
	}
	if !trace.SpanContextFromContext(ctx).IsValid() {
		ctx = tracing.WithParent(ctx, r.TraceParent)
	}
	ctx, span := tracer.Start(ctx, "webhook POST", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(semconv.HTTPRequestMethodKey.String(http.MethodPost), semconv.ServerAddress(req.URL.Hostname()),
			tracing.AttrDeliveryID.String(r.Headers["webhook-id"])))
	tracing.InjectHeaders(ctx, req.Header)
	return span
}

// endSpan ends span with the response's status or the transport error.
func endSpan(span trace.Span, status int, err error) {
	switch {
	case err != nil:
		span.SetStatus(codes.Error, err.Error())
	case status < 200 || status > 299:
		span.SetAttributes(semconv.HTTPResponseStatusCode(status))
		span.SetStatus(codes.Error, http.StatusText(status))
	default:
		span.SetAttributes(semconv.HTTPResponseStatusCode(status))
	}
	span.End()
}
