package httpapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/adapters/httperr/httperrtest"
	"github.com/threadengine/engine/adapters/limits"
	"github.com/threadengine/engine/domain"
)

// The error handler writes every error from its public view and logs an
// internal one once, with the request.
func TestErrorHandler(t *testing.T) {
	e := echo.New()
	cases := []struct {
		name   string
		err    error
		status int
		logs   int
		check  func(map[string]any) bool
	}{
		{"field", domain.Invalid("email", "bad"), 400, 0, func(b map[string]any) bool { return b["field"] == "email" && b["detail"] == "bad" }},
		{"details", domain.Forbidden("no").WithDetail("required", "users.manage"), 403, 0, func(b map[string]any) bool { return b["required"] == "users.manage" }},
		{"internal hides cause", errors.New("pq: password=secret"), 500, 1, func(b map[string]any) bool {
			return b["code"] == "internal" && !strings.Contains(b["detail"].(string), "secret")
		}},
		{"echo's 405", echo.ErrMethodNotAllowed, 405, 0, func(b map[string]any) bool { return b["code"] == "method_not_allowed" }},
		{"echo's 413", echo.ErrStatusRequestEntityTooLarge, 413, 0, func(b map[string]any) bool { return b["code"] == "body_too_large" }},
	}
	for _, c := range cases {
		logs := httperrtest.NewLogs()
		rec := httptest.NewRecorder()
		ctx := e.NewContext(httptest.NewRequest(http.MethodGet, "/v1/users", nil), rec)
		ctx.Set(loggerKey, logs.Logger())
		ErrorHandler(logs.Logger())(c.err, ctx)
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if rec.Code != c.status || rec.Header().Get("Content-Type") != ProblemContentType || body["status"] != float64(c.status) || !c.check(body) {
			t.Errorf("%s: %d %s %v", c.name, rec.Code, rec.Header().Get("Content-Type"), body)
		}
		if n := len(logs.Mentioning(slog.LevelError, "")); n != c.logs {
			t.Errorf("%s: %d error records, want %d: %+v", c.name, n, c.logs, logs.Records())
		}
		if c.logs == 1 && len(logs.Mentioning(slog.LevelError, "secret")) != 1 {
			t.Errorf("%s: the cause was not logged: %+v", c.name, logs.Records())
		}
	}
}

// The read-timeout refusal is an immutable base: what one request does with
// its error never reaches the next.
func TestBodyTimeoutIsImmutable(t *testing.T) {
	first := domain.AsError(jsonError(os.ErrDeadlineExceeded))
	first.Message = "changed"
	first.Details["limit"] = "changed"
	second := domain.AsError(jsonError(os.ErrDeadlineExceeded))
	if second.Message == "changed" || second.Details["limit"] != string(limits.HTTPReadTimeout) || second.Code != domain.CodeLimitExceeded {
		t.Fatalf("second refusal: %+v", second)
	}
}

func TestDecodeJSON(t *testing.T) {
	type req struct {
		Name  string `json:"name"`
		Count int    `json:"count"`
	}
	e := echo.New()
	cases := []struct {
		body  string
		code  domain.Code
		field string
	}{
		{`{"name":"a","count":1}`, "", ""},
		{`{"name":"a","extra":1}`, domain.CodeValidationFailed, "extra"},
		{`{"count":"x"}`, domain.CodeValidationFailed, "count"},
		{`{"name":"a"}{"name":"b"}`, domain.CodeValidationFailed, ""},
		{`{"name":"a"} x`, domain.CodeValidationFailed, ""},
		{``, domain.CodeValidationFailed, ""},
		{`[1]`, domain.CodeValidationFailed, ""},
		{`{"name":"` + strings.Repeat("a", MaxBodyBytes) + `"}`, domain.CodeBodyTooLarge, ""},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		ctx := e.NewContext(httptest.NewRequest(http.MethodPost, "/", strings.NewReader(c.body)), rec)
		var v req
		err := DecodeJSON(ctx, &v)
		if domain.CodeOf(err) != c.code || (err != nil && domain.AsError(err).Field != c.field) {
			t.Errorf("%.40q: got %v (field %q), want %q field %q", c.body, err, domain.AsError(err), c.code, c.field)
		}
	}
}
