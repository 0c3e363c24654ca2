package graphqlapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	gqlerrors "github.com/graph-gophers/graphql-go/errors"

	"github.com/threadengine/engine/adapters/httperr/httperrtest"
	"github.com/threadengine/engine/domain"
)

// A request refused as a whole answers the error's engine code (the one
// REST, WebSocket and MCP answer) with its kind's HTTP status, for every
// kind.
func TestRefusalOfEveryKind(t *testing.T) {
	t.Parallel()
	for _, k := range domain.Kinds() {
		code := domain.CodeInternal
		for _, c := range domain.Codes() {
			if domain.KindsOf(c)[0] == k {
				code = c
				break
			}
		}
		h := &Handler{log: httperrtest.NewLogs().Logger()}
		res, status := h.refuse(context.Background(), domain.E(k, code, "refused"))
		wantMsg := "refused"
		if k == domain.KindInternal {
			wantMsg = domain.InternalMessage
		}
		if status != k.HTTPStatus() || res.Errors[0].Extensions["code"] != string(code) || res.Errors[0].Message != wantMsg {
			t.Errorf("%s: %d %+v", k, status, res.Errors[0])
		}
	}
}

// A resolver's internal error is hidden and logged once, with its path; an
// unavailable one names its code and when to retry.
func TestResolverErrors(t *testing.T) {
	t.Parallel()
	logs := httperrtest.NewLogs()
	h := &Handler{log: logs.Logger()}
	internal := &gqlerrors.QueryError{Message: "pq: secret", ResolverError: errors.New("pq: secret"), Path: []any{"thread", "steps"}}
	p := h.classify(context.Background(), internal)
	if !p.Internal || internal.Message != domain.InternalMessage || internal.Extensions["code"] != "internal" {
		t.Errorf("internal: %+v", internal)
	}
	if got := logs.Mentioning(slog.LevelError, "pq: secret"); len(got) != 1 || len(logs.Records()) != 1 || !strings.Contains(got[0].Attrs["path"], "steps") {
		t.Errorf("logged %+v, want once with the path", logs.Records())
	}

	down := &gqlerrors.QueryError{ResolverError: domain.E(domain.KindUnavailable, domain.CodeUnavailable, "the database is unavailable").
		WithRetryAfter(2 * time.Second)}
	h.classify(context.Background(), down)
	if down.Extensions["code"] != "unavailable" || down.Extensions["retryAfter"] != 2 || down.Message != "the database is unavailable" {
		t.Errorf("unavailable: %+v", down)
	}

	panicked := panicHandler{}.MakePanicError(context.Background(), "nil map")
	if h.classify(context.Background(), panicked); panicked.Extensions["code"] != "internal" || len(logs.Mentioning(slog.LevelError, "nil map")) != 1 {
		t.Errorf("panic: %+v, logs %+v", panicked, logs.Records())
	}
}

// Refusals before execution carry their headers: Retry-After when a retry
// may succeed, the Bearer challenge on 401.
func TestRefusalHeaders(t *testing.T) {
	t.Parallel()
	h := &Handler{log: httperrtest.NewLogs().Logger()}
	for _, c := range []struct {
		err           error
		header, value string
		status        int
	}{
		{domain.E(domain.KindUnavailable, domain.CodeUnavailable, "down"), "Retry-After", "1", 503},
		{domain.ErrUnauthenticated, "WWW-Authenticate", `Bearer realm="threadengine"`, 401},
	} {
		res, status := h.refuse(context.Background(), c.err)
		w := httptest.NewRecorder()
		h.writeJSON(w, httptest.NewRequest(http.MethodPost, "/graphql", nil), status, res)
		if w.Code != c.status || w.Header().Get(c.header) != c.value {
			t.Errorf("%v: %d %v", c.err, w.Code, w.Header())
		}
	}
	// Wrong method: 405 from the kind, with Allow.
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPut, "/graphql", nil))
	if w.Code != 405 || w.Header().Get("Allow") != "GET, POST" || !strings.Contains(w.Body.String(), `"code":"method_not_allowed"`) {
		t.Errorf("PUT: %d %v %s", w.Code, w.Header(), w.Body)
	}
}
