package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/domain"
)

func TestWriteProblem(t *testing.T) {
	e := echo.New()
	cases := []struct {
		name   string
		err    error
		status int
		check  func(map[string]any) bool
	}{
		{"field", domain.Invalid("email", "bad"), 400, func(b map[string]any) bool { return b["field"] == "email" && b["detail"] == "bad" }},
		{"details", domain.Forbidden("no").WithDetail("required", "users.manage"), 403, func(b map[string]any) bool { return b["required"] == "users.manage" }},
		{"internal hides cause", errors.New("pq: password=secret"), 500, func(b map[string]any) bool {
			return b["code"] == "internal" && !strings.Contains(b["detail"].(string), "secret")
		}},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		ctx := e.NewContext(httptest.NewRequest(http.MethodGet, "/", nil), rec)
		if err := writeError(ctx, c.err); err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if rec.Code != c.status || rec.Header().Get("Content-Type") != ProblemContentType || body["status"] != float64(c.status) || !c.check(body) {
			t.Errorf("%s: %d %s %v", c.name, rec.Code, rec.Header().Get("Content-Type"), body)
		}
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
