package mcpapi

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/threadengine/engine/domain"
)

func TestToolErrKeepsInternalCausesInTheLog(t *testing.T) {
	var logged bytes.Buffer
	tl := &tools{d: Deps{Log: slog.New(slog.NewTextHandler(&logged, nil))}}
	tests := []struct {
		name      string
		err       error
		want      []string
		wantNot   string
		wantInLog bool
	}{
		{name: "internal", err: domain.Internal(errors.New("dial tcp 10.0.0.5:5432: password=hunter2"), "query failed"),
			want: []string{`"code":"internal"`, "an internal error occurred"}, wantNot: "hunter2", wantInLog: true},
		{name: "foreign error", err: errors.New("pq: relation threads does not exist"),
			want: []string{`"code":"internal"`}, wantNot: "relation", wantInLog: true},
		{name: "validation keeps field", err: domain.Invalid("limit", "limit must be between 1 and 100"),
			want: []string{`"code":"validation_failed"`, `"field":"limit"`, "between 1 and 100"}},
		{name: "not found", err: domain.NotFound("thread t1"), want: []string{`"code":"not_found"`, "thread t1 not found"}},
		{name: "forbidden keeps details", err: domain.Forbidden("no").WithDetail("required", "threads.read"),
			want: []string{`"code":"forbidden"`, `"required":"threads.read"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logged.Reset()
			msg := tl.toolErr(context.Background(), "get_thread", tt.err).Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%s lacks %s", msg, w)
				}
			}
			if tt.wantNot != "" && strings.Contains(msg, tt.wantNot) {
				t.Errorf("%s leaks %q", msg, tt.wantNot)
			}
			if got := logged.Len() > 0; got != tt.wantInLog {
				t.Errorf("logged = %v, want %v (%s)", got, tt.wantInLog, logged.String())
			}
		})
	}
}

func TestSDKLoggerDemotesInfo(t *testing.T) {
	var buf bytes.Buffer
	base := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	l := sdkLogger(base).With("component", "mcp")
	l.Info("server session connected")
	if buf.Len() != 0 {
		t.Fatalf("info record passed an info-level handler: %s", buf.String())
	}
	l.Error("failed to connect")
	if !strings.Contains(buf.String(), "level=ERROR") || !strings.Contains(buf.String(), "component=mcp") {
		t.Fatalf("error record lost: %s", buf.String())
	}
	buf.Reset()
	debug := sdkLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	debug.Info("session initialized")
	if !strings.Contains(buf.String(), "level=DEBUG") {
		t.Fatalf("info record not demoted to debug: %s", buf.String())
	}
}
