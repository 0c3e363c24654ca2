package tracing

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

func TestTracesURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://collector:4318":              "http://collector:4318/v1/traces",
		"http://collector:4318/":             "http://collector:4318/v1/traces",
		"https://otlp.example.com/v1/traces": "https://otlp.example.com/v1/traces",
		"https://gw.example.com/otlp/traces": "https://gw.example.com/otlp/traces",
	} {
		if got, err := tracesURL(in); err != nil || got != want {
			t.Errorf("tracesURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"collector:4318", "ftp://x", "http://"} {
		if _, err := tracesURL(bad); err == nil {
			t.Errorf("tracesURL(%q) accepted", bad)
		}
	}
}

// A traceparent survives the trip through a record (TraceParent, then
// WithParent elsewhere), malformed values are ignored, and the SDKs'
// hexadecimal refs name a parent too.
func TestPropagation(t *testing.T) {
	t.Parallel()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := WithParent(context.Background(), tp)
	if got := TraceParent(ctx); got != tp {
		t.Fatalf("round trip %q, want %q", got, tp)
	}
	if got := TraceParent(WithParent(context.Background(), "00-nonsense")); got != "" {
		t.Fatalf("malformed traceparent gave %q", got)
	}
	if TraceParent(context.Background()) != "" {
		t.Fatal("no span, yet a traceparent")
	}
	ctx = WithParentIDs(context.Background(), "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7")
	if got := TraceParent(ctx); got != tp {
		t.Fatalf("from ids %q, want %q", got, tp)
	}
	if got := TraceParent(WithParentIDs(context.Background(), "xyz", "00f067aa0ba902b7")); got != "" {
		t.Fatalf("bad ids gave %q", got)
	}
	// With tracing off the caller's context still flows (to the logs).
	_, span := Tracer(Off().TracerProvider(), "test").Start(WithParent(context.Background(), tp), "x")
	if span.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("off: span context %v", span.SpanContext())
	}
}

func TestLogHandlerAddsTraceIDs(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(LogHandler(slog.NewTextHandler(&buf, nil))).With("component", "x")
	log.InfoContext(WithParent(context.Background(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), "traced")
	log.InfoContext(context.Background(), "untraced")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7") ||
		!strings.Contains(lines[0], "component=x") || strings.Contains(lines[1], "trace_id") {
		t.Fatalf("log lines %q", lines)
	}
}
