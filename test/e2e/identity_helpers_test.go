package e2e

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/test/enginetest"
)

// forEachDialect runs fn against a fresh engine on every test dialect.
func forEachDialect(t *testing.T, fn func(t *testing.T, e *enginetest.Engine)) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		fn(t, enginetest.Start(t, d))
	})
}

// forEachDialectD is forEachDialect for tests that start engines themselves.
func forEachDialectD(t *testing.T, fn func(t *testing.T, d sqldb.Dialect)) {
	sqldbtest.ForEachDialect(t, fn)
}

type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
	Field  string `json:"field"`
}

// wantProblem checks status, problem+json content type and the code.
func wantProblem(t *testing.T, resp *http.Response, body []byte, status int, code string) problem {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("content type %q, want application/problem+json", ct)
	}
	var p problem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("problem body: %v: %s", err, body)
	}
	if p.Status != status || p.Code != code || p.Type == "" || p.Title == "" {
		t.Fatalf("problem %+v, want status %d code %s", p, status, code)
	}
	return p
}

func wantStatus(t *testing.T, resp *http.Response, body []byte, status int) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, body)
	}
}

type userBody struct {
	User struct {
		ID     string `json:"id"`
		Email  string `json:"email"`
		Role   string `json:"role"`
		Status string `json:"status"`
	} `json:"user"`
	Created bool `json:"created"`
}

func decode[T any](t *testing.T, body []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return v
}
