package httperr

import (
	"context"
	"encoding/json"
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

func TestReportLogsWhatItHidesOnce(t *testing.T) {
	t.Parallel()
	secret := errors.New("pq: password=hunter2")
	cases := []struct {
		name  string
		err   error
		level slog.Level
		logs  int
	}{
		{"foreign error", secret, slog.LevelError, 1},
		{"internal", domain.Internal(secret, "row 7"), slog.LevelError, 1},
		{"unavailable: its cause for the operator", domain.E(domain.KindUnavailable, domain.CodeUnavailable, "down").WithCause(secret), slog.LevelWarn, 1},
		{"a refusal is not logged", domain.Invalid("x", "bad").WithCause(secret), slog.LevelDebug, 0},
	}
	for _, c := range cases {
		logs := httperrtest.NewLogs()
		p := Report(context.Background(), logs.Logger(), c.err, "path", "/v1/x")
		got := logs.Mentioning(c.level, "hunter2")
		if len(got) != c.logs || len(logs.Records()) != c.logs {
			t.Errorf("%s: %d records mention the cause (%d in all), want %d", c.name, len(got), len(logs.Records()), c.logs)
			continue
		}
		if c.logs == 1 && got[0].Attrs["path"] != "/v1/x" {
			t.Errorf("%s: logged without the request's attrs: %+v", c.name, got[0])
		}
		if p.Internal && strings.Contains(p.Message, "hunter2") {
			t.Errorf("%s: the public message shows the cause", c.name)
		}
	}
}

func TestWriteProblem(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		err    error
		status int
		header map[string]string
		check  func(map[string]any) bool
	}{
		{"field", domain.Invalid("email", "bad"), 400, nil,
			func(b map[string]any) bool {
				return b["field"] == "email" && b["detail"] == "bad" && b["code"] == "validation_failed"
			}},
		{"details are members, the standard ones win", domain.Forbidden("no").WithDetail("required", "users.manage").WithDetail("status", 1), 403, nil,
			func(b map[string]any) bool { return b["required"] == "users.manage" && b["status"] == float64(403) }},
		{"internal", errors.New("boom"), 500, nil,
			func(b map[string]any) bool {
				return b["code"] == "internal" && b["detail"] == domain.InternalMessage && b["title"] == "Internal Server Error"
			}},
		{"unauthenticated", domain.ErrUnauthenticated, 401, map[string]string{"WWW-Authenticate": `Bearer realm="threadengine"`}, nil},
		{"unavailable", domain.E(domain.KindUnavailable, domain.CodeUnavailable, "down").WithRetryAfter(1500 * time.Millisecond), 503,
			map[string]string{"Retry-After": "2"}, func(b map[string]any) bool { return b["type"] == "urn:threadengine:problem:unavailable" }},
		{"rate limited", domain.E(domain.KindRateLimited, domain.CodeRateLimited, "slow down"), 429, map[string]string{"Retry-After": "1"}, nil},
		{"not retryable", domain.NotFound("thread"), 404, map[string]string{"Retry-After": ""}, nil},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		if err := WriteProblem(rec, httptest.NewRequest(http.MethodGet, "/", nil), domain.Public(c.err)); err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if rec.Code != c.status || body["status"] != float64(c.status) || rec.Header().Get("Content-Type") != ProblemContentType ||
			rec.Header().Get("Cache-Control") != "no-store" || (c.check != nil && !c.check(body)) {
			t.Errorf("%s: %d %v %v", c.name, rec.Code, rec.Header(), body)
		}
		for k, v := range c.header {
			if rec.Header().Get(k) != v {
				t.Errorf("%s: %s = %q, want %q", c.name, k, rec.Header().Get(k), v)
			}
		}
	}
	rec := httptest.NewRecorder()
	_ = WriteProblem(rec, httptest.NewRequest(http.MethodHead, "/", nil), domain.Public(domain.ErrNotFound))
	if rec.Code != 404 || rec.Body.Len() != 0 {
		t.Errorf("HEAD: %d %q", rec.Code, rec.Body)
	}
}
