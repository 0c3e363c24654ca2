package mcpapi

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/httperr/httperrtest"
	"github.com/threadengine/engine/domain"
)

// Without a principal the endpoint answers a coded problem, not plain text.
func TestUnauthenticatedIsCoded(t *testing.T) {
	h := &Handler{}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{}`)))
	if w.Code != http.StatusUnauthorized || w.Header().Get("Content-Type") != "application/problem+json" ||
		w.Header().Get("WWW-Authenticate") == "" || !strings.Contains(w.Body.String(), `"code":"unauthenticated"`) {
		t.Fatalf("%d %v %s", w.Code, w.Header(), w.Body)
	}
}

func TestToolErrKeepsInternalCausesInTheLog(t *testing.T) {
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
		{name: "unavailable says when to retry", err: domain.E(domain.KindUnavailable, domain.CodeUnavailable, "the database is unavailable").
			WithCause(errors.New("dial tcp: connection refused")).WithRetryAfter(2 * time.Second),
			want: []string{`"code":"unavailable"`, `"retryAfter":2`}, wantNot: "refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := httperrtest.NewLogs()
			tl := &tools{d: Deps{Log: logs.Logger()}}
			msg := tl.toolErr(context.Background(), "get_thread", tt.err).Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%s lacks %s", msg, w)
				}
			}
			if tt.wantNot != "" && strings.Contains(msg, tt.wantNot) {
				t.Errorf("%s leaks %q", msg, tt.wantNot)
			}
			want := 0
			if tt.wantInLog {
				want = 1
			}
			if got := logs.Mentioning(slog.LevelError, ""); len(got) != want || (want == 1 && got[0].Attrs["tool"] != "get_thread") {
				t.Errorf("logged %+v, want %d error record naming the tool", logs.Records(), want)
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
