package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// While the database is out of reach every transport answers the
// retryable code unavailable with when to retry, not "internal error":
// REST 503 + Retry-After, GraphQL extensions.code unavailable (+
// retryAfter), the WebSocket error reply (+ retryAfterMs), OTLP 503 +
// Retry-After (gRPC UNAVAILABLE), MCP tool error unavailable. PostgreSQL is
// cut for real (connections reset, port closed); SQLite's database is
// closed under the engine. With the authentication cache the requests
// reach their use case's store; without it, authentication itself is
// refused as unavailable.
func TestDatabaseOutageIsRetryable(t *testing.T) {
	t.Parallel()
	for _, cached := range []bool{true, false} {
		ttl := time.Duration(0)
		if cached {
			ttl = time.Minute
		}
		withTTL := enginetest.WithConfig(func(c *config.Config) { c.Auth.CacheTTL = ttl })
		t.Run(fmt.Sprintf("postgres/cached=%v", cached), func(t *testing.T) {
			t.Parallel()
			base := sqldbtest.URL(t, sqldb.Postgres)
			out := sqldbtest.NewOutage(t, base)
			e := enginetest.Start(t, sqldb.Postgres, enginetest.WithDatabase(out.Via(t, base)), withTTL)
			outage(t, e, cached, out.Cut)
		})
		t.Run(fmt.Sprintf("sqlite/cached=%v", cached), func(t *testing.T) {
			t.Parallel()
			e := enginetest.Start(t, sqldb.SQLite, withTTL)
			outage(t, e, cached, func() { _ = e.Server.DB.Close() })
		})
	}
}

// otlpOutageTrace is one valid span (OTLP/JSON).
const otlpOutageTrace = `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"checkout-service"}}]},
 "scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"pay",
  "startTimeUnixNano":"1795255200000000000","endTimeUnixNano":"1795255201000000000"}]}]}]}`

func outage(t *testing.T, e *enginetest.Engine, cached bool, cut func()) {
	ws := connectWS(t, e, e.AdminKey)
	tid := ws.ok(map[string]any{"action": "startThread", "refs": map[string]any{"orderId": "O-1"}})["threadId"].(string)
	mcpSession := mustConnect(t, e, e.AdminKey)
	cut()

	// REST.
	resp, body := e.Do(t, http.MethodGet, "/v1/users", e.AdminKey, nil)
	if p := wantProblem(t, resp, body, http.StatusServiceUnavailable, "unavailable"); p.Detail == "" || resp.Header.Get("Retry-After") != "2" {
		t.Errorf("REST: Retry-After %q, %s", resp.Header.Get("Retry-After"), body)
	}

	// GraphQL: refused at authentication (503), or by the resolver's read
	// (200, GraphQL over HTTP).
	resp, body = e.DoWith(t, http.MethodPost, "/graphql", map[string]any{"query": "{ threads { totalCount } }"}, func(r *http.Request) {
		r.Header.Set("X-API-Key", e.AdminKey)
	})
	var g gqlResult
	if err := json.Unmarshal(body, &g); err != nil || len(g.Errors) == 0 {
		t.Fatalf("GraphQL: %d %s", resp.StatusCode, body)
	}
	wantStatus := http.StatusOK
	if !cached {
		wantStatus = http.StatusServiceUnavailable
		if resp.Header.Get("Retry-After") != "2" {
			t.Errorf("GraphQL: Retry-After %q", resp.Header.Get("Retry-After"))
		}
	}
	if ext := g.Errors[0].Extensions; resp.StatusCode != wantStatus || ext["code"] != "unavailable" || ext["retryAfter"] != float64(2) {
		t.Errorf("GraphQL: %d %s", resp.StatusCode, body)
	}

	// WebSocket: the open socket's writes, and a new socket.
	for _, frame := range []map[string]any{
		step(tid, "pay", "success", "k1", nil),
		{"action": "startThread", "refs": map[string]any{"orderId": "O-2"}, "requestId": "s2"},
	} {
		if r := ws.call(frame); r["status"] != "error" || r["code"] != "unavailable" || r["retryAfterMs"] != float64(2000) {
			t.Errorf("WebSocket %v: %v", frame["action"], r)
		}
	}
	fresh := dialWS(t, e)
	r := fresh.call(map[string]any{"action": "connect", "apiKey": e.AdminKey})
	if cached {
		if r["status"] != "success" {
			t.Fatalf("WebSocket connect with a cached key: %v", r)
		}
		r = fresh.call(map[string]any{"action": "startThread", "refs": map[string]any{}})
	}
	if r["status"] != "error" || r["code"] != "unavailable" || r["retryAfterMs"] != float64(2000) {
		t.Errorf("WebSocket (new socket): %v", r)
	}

	// OTLP: google.rpc.Status UNAVAILABLE from the ingest, or the REST
	// problem from authentication.
	resp, body = e.DoWith(t, http.MethodPost, "/v1/traces", otlpOutageTrace, func(r *http.Request) {
		r.Header.Set("X-API-Key", e.AdminKey)
	})
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "2" || !strings.Contains(string(body), "unavailable") {
		t.Errorf("OTLP: %d Retry-After %q %q", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if cached {
		var st struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(body, &st); err != nil || st.Code != 14 || !strings.HasPrefix(st.Message, "unavailable: ") {
			t.Errorf("OTLP: %s (%v)", body, err)
		}
	}

	// MCP: a tool error the agent can read, or the coded 503 of
	// authentication.
	if cached {
		res := callTool(t, mcpSession, "search_threads", map[string]any{})
		if txt := resultText(res); !res.IsError || !strings.Contains(txt, `"code":"unavailable"`) || !strings.Contains(txt, `"retryAfter":2`) {
			t.Errorf("MCP: %s", txt)
		}
	} else {
		resp, body = e.DoWith(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_threads","arguments":{}}}`,
			func(r *http.Request) {
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Accept", "application/json, text/event-stream")
				r.Header.Set("Authorization", "Bearer "+e.AdminKey)
			})
		wantProblem(t, resp, body, http.StatusServiceUnavailable, "unavailable")
	}
}

// The same error has the same code on every transport that can meet it,
// with its kind's status wherever the transport has one: a contract that
// does not exist (REST, GraphQL, WebSocket, MCP) and a viewer writing
// (REST, WebSocket, OTLP).
func TestSameErrorSameCode(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		// not_found.
		resp, body := e.Do(t, http.MethodGet, "/v1/contracts/no_such_contract", e.AdminKey, nil)
		wantProblem(t, resp, body, http.StatusNotFound, "not_found")
		status, g, body := gqlPost(t, e, e.AdminKey, `{ contractGraph(name: "no_such_contract") { parties } }`, nil)
		if status != http.StatusOK || len(g.Errors) != 1 || g.Errors[0].Extensions["code"] != "not_found" {
			t.Errorf("GraphQL not_found: %d %s", status, body)
		}
		ws := connectWS(t, e, e.AdminKey)
		if r := ws.call(map[string]any{"action": "startThread", "contractName": "no_such_contract", "role": "merchant", "refs": map[string]any{}}); r["code"] != "not_found" {
			t.Errorf("WebSocket not_found: %v", r)
		}
		res := callTool(t, mustConnect(t, e, e.AdminKey), "contract_graph", map[string]any{"name": "no_such_contract"})
		wantToolError(t, "contract_graph", res, `"code":"not_found"`)

		// forbidden.
		_, viewer := e.NewUser(t, domain.RoleViewer)
		resp, body = e.Do(t, http.MethodPost, "/v1/contracts", viewer, map[string]string{"source": "name: x"})
		wantProblem(t, resp, body, http.StatusForbidden, "forbidden")
		vws := connectWS(t, e, viewer)
		if r := vws.call(map[string]any{"action": "startThread", "refs": map[string]any{}}); r["code"] != "forbidden" {
			t.Errorf("WebSocket forbidden: %v", r)
		}
		resp, body = e.DoWith(t, http.MethodPost, "/v1/traces", otlpOutageTrace, func(r *http.Request) { r.Header.Set("X-API-Key", viewer) })
		var st struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(body, &st); err != nil || resp.StatusCode != http.StatusForbidden || st.Code != 7 || !strings.HasPrefix(st.Message, "forbidden: ") {
			t.Errorf("OTLP forbidden: %d %s", resp.StatusCode, body)
		}
	})
}
