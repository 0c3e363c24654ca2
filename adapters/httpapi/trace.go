package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/threadengine/engine/adapters/tracing"
)

// untraced routes get no span: probes and scrapes would drown the traces,
// and a WebSocket's request lasts as long as the socket (each of its
// frames gets its own span, adapters/wsapi).
var untraced = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true, "/threads": true}

// Trace is middleware giving every request a server span named after its
// route ("POST /v1/users"), continuing the trace of the request's
// traceparent header. Mount it outside Observe, so the request's log line
// carries the trace id.
func Trace(tp trace.TracerProvider) echo.MiddlewareFunc {
	tracer := tracing.Tracer(tp, "httpapi")
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			ctx := tracing.FromHeaders(r.Context(), r.Header)
			rt := c.Path()
			if untraced[rt] {
				c.SetRequest(r.WithContext(ctx))
				return next(c)
			}
			name := r.Method
			if rt != "" {
				name += " " + rt
			}
			ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(semconv.HTTPRequestMethodKey.String(r.Method), semconv.URLPath(r.URL.Path)))
			if rt != "" {
				span.SetAttributes(semconv.HTTPRoute(rt))
			}
			defer span.End()
			c.SetRequest(r.WithContext(ctx))
			err := next(c)
			status := c.Response().Status
			span.SetAttributes(semconv.HTTPResponseStatusCode(status))
			if status >= http.StatusInternalServerError {
				span.SetStatus(codes.Error, http.StatusText(status))
			}
			return err
		}
	}
}
