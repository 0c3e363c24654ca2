package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/opshttp"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// recordBig starts a thread and records n attempts of one step, each with
// a context of about size bytes.
func recordBig(t *testing.T, e *enginetest.Engine, n, size int) string {
	t.Helper()
	ctx := adminCtx(e)
	th, err := e.Server.Threads.Application().Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		status := "failed"
		if i == n-1 {
			status = "success"
		}
		if _, err := e.Server.Threads.Application().Commands.RecordStep.Handle(ctx, threadsapp.RecordStepInput{ThreadID: th.ID,
			StepName: "upload", IdempotencyKey: "u1", Status: status,
			Context: map[string]string{"blob": strings.Repeat(fmt.Sprint(i%10), size)}}); err != nil {
			t.Fatal(err)
		}
	}
	return th.ID
}

// Issue 25 item 3: contexts read for lists are cut at
// limits.graphql.list_context_bytes and marked, unless one attempt is
// read alone; the answer's bytes are bounded; a read's deadline and the
// per-principal points budget answer coded errors.
func TestReadsBounded(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		e := enginetest.Start(t, d, enginetest.WithConfig(func(c *config.Config) {
			c.Limits.GraphQL.PointsPerSecond, c.Limits.GraphQL.PointsBurst = 1, 1200
			c.Limits.GraphQL.MaxResponseBytes = 1 << 20
		}))
		_, key := e.NewUser(t, domain.RoleViewer)
		id := recordBig(t, e, 3, 40<<10) // 40 KiB contexts, over the 16 KiB list cap

		// A list of attempts: every context cut and marked, the bytes
		// answered a small fraction of the bytes stored.
		st, r, raw := gqlPost(t, e, key, `query($id: ID!) { thread(id: $id) { attempts(limit: 200) { context } } }`, map[string]any{"id": id})
		if st != http.StatusOK || len(r.Errors) != 0 {
			t.Fatalf("attempts: %d %.300s", st, raw)
		}
		atts := r.Data["thread"].(map[string]any)["attempts"].([]any)
		for _, a := range atts {
			c := a.(map[string]any)["context"]
			var m map[string]any
			if err := json.Unmarshal([]byte(fmt.Sprint(c)), &m); err != nil || m["$truncated"] != true || m["bytes"].(float64) < 40<<10 {
				t.Fatalf("a listed context: %.200v", c)
			}
		}
		t.Logf("%s: 3 attempts of 40 KiB contexts listed in %d bytes", d, len(raw))
		if len(atts) != 3 || len(raw) > 3*2048 {
			t.Fatalf("%d attempts in %d bytes", len(atts), len(raw))
		}
		// One attempt alone: the whole context.
		st, r, raw = gqlPost(t, e, key, `query($id: String!) { stepHistory(threadId: $id, stepName: "upload", idempotencyKey: "u1", limit: 1, offset: 2) { context } }`,
			map[string]any{"id": id})
		if st != http.StatusOK || len(r.Errors) != 0 || !strings.Contains(string(raw), strings.Repeat("0", 40<<10)) {
			t.Fatalf("one attempt: %d %.300s", st, raw)
		}

		// The per-principal points budget (1 point per second, burst 1,200
		// here): the second operation of 1,000 points is refused.
		big := `query { threads(limit: 100) { threads { id status startedAt completedAt error contractName contractVersion ownerId lastHash } } }`
		if st, r, raw = gqlPost(t, e, key, big, nil); st != http.StatusOK {
			t.Fatalf("first: %d %.300s", st, raw)
		}
		resp, body := e.Do(t, http.MethodPost, "/graphql", key, map[string]any{"query": big})
		json.Unmarshal(body, &r)
		if resp.StatusCode != http.StatusTooManyRequests || r.Errors[0].Extensions["code"] != "limit_exceeded" ||
			r.Errors[0].Extensions["limit"] != "graphql_points" || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("second: %d %v %s", resp.StatusCode, resp.Header, body)
		}
		// Until its Retry-After the principal is refused before its request
		// is read: a cheap operation, and a body that is not even JSON
		// (400 once read), get the same 429.
		for _, body := range []string{`{"query":"{ __typename }"}`, `{not json`} {
			resp, raw := e.Do(t, http.MethodPost, "/graphql", key, body)
			json.Unmarshal(raw, &r)
			if resp.StatusCode != http.StatusTooManyRequests || len(r.Errors) != 1 || r.Errors[0].Extensions["limit"] != "graphql_points" ||
				resp.Header.Get("Retry-After") == "" {
				t.Fatalf("%s from a principal refused a moment ago: %d %v %s", body, resp.StatusCode, resp.Header, raw)
			}
		}
		// Another principal has its own budget.
		_, other := e.NewUser(t, domain.RoleViewer)
		if st, _, raw = gqlPost(t, e, other, big, nil); st != http.StatusOK {
			t.Fatalf("another principal: %d %.300s", st, raw)
		}
		fams := scrape(t, e, "")
		if n := metricValue(fams, "threadengine_graphql_refused_total", map[string]string{"reason": "limit"}); n != 3 {
			t.Fatalf("GraphQL refusals by the gate counted %v, want 3 (one refused, two held)", n)
		}
		if n := metricValue(fams, "threadengine_limit_refusals_total", map[string]string{"limit": "graphql_points"}); n != 3 {
			t.Fatalf("graphql_points refusals counted %v", n)
		}
	})
}

// The answer's byte budget and the deadline, each with an engine
// configured to reach it.
func TestReadsCutAnswerCodedErrors(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		e := enginetest.Start(t, d, enginetest.WithConfig(func(c *config.Config) {
			c.Limits.GraphQL.MaxResponseBytes = 2000
		}))
		_, key := e.NewUser(t, domain.RoleViewer)
		for i := 0; i < 30; i++ {
			recordBig(t, e, 1, 10)
		}
		q := `{ threads(limit: 30) { threads { id startedAt status } } }`
		resp, body := e.Do(t, http.MethodPost, "/graphql", key, map[string]any{"query": q})
		var r gqlResult
		json.Unmarshal(body, &r)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || r.Errors[0].Extensions["code"] != "limit_exceeded" ||
			r.Errors[0].Extensions["limit"] != "graphql_response_bytes" || r.Data != nil {
			t.Fatalf("answer over the budget: %d %s", resp.StatusCode, body)
		}
		if st, _, raw := gqlPost(t, e, key, `{ threads(limit: 2) { threads { id } } }`, nil); st != http.StatusOK {
			t.Fatalf("a small answer: %d %s", st, raw)
		}
		// MCP: the same budget on a tool's result.
		cs := mustConnect(t, e, key)
		wantToolError(t, "search_threads", callTool(t, cs, "search_threads", map[string]any{"limit": 30}), "graphql_response_bytes")
		if res := callTool(t, cs, "search_threads", map[string]any{"limit": 1}); res.IsError {
			t.Fatalf("a small result: %s", resultText(res))
		}
		cs.Close()

		// A deadline no read can meet: every operation is cut and coded.
		e2 := enginetest.Start(t, d, enginetest.WithConfig(func(c *config.Config) { c.Limits.GraphQL.MaxDuration = time.Nanosecond }))
		_, key2 := e2.NewUser(t, domain.RoleViewer)
		resp, body = e2.Do(t, http.MethodPost, "/graphql", key2, map[string]any{"query": `{ threads { totalCount threads { id } } }`})
		json.Unmarshal(body, &r)
		if resp.StatusCode != http.StatusServiceUnavailable || r.Errors[0].Extensions["code"] != "query_timeout" || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("cut by the deadline: %d %s", resp.StatusCode, body)
		}
		cs = mustConnect(t, e2, key2)
		wantToolError(t, "search_threads", callTool(t, cs, "search_threads", map[string]any{}), "query_timeout")
		cs.Close()
	})
}

// An NDJSON export stops at limits.graphql.export_max_bytes with a
// truncation line; following its continuations exports every thread
// once, each response within the budget plus one thread.
func TestExportByteBudget(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		const budget = 30000
		e := enginetest.Start(t, d, enginetest.WithConfig(func(c *config.Config) { c.Limits.GraphQL.ExportMaxBytes = budget }))
		_, key := e.NewUser(t, domain.RoleViewer)
		want := map[string]bool{}
		for i := 0; i < 12; i++ {
			want[recordBig(t, e, 1, 4000)] = true
		}
		seen := map[string]int{}
		next, rounds, biggest := "/v1/threads/export", 0, 0
		for next != "" {
			rounds++
			resp, body := e.Do(t, http.MethodGet, next, key, nil)
			wantStatus(t, resp, body, http.StatusOK)
			next = ""
			sc := bufio.NewScanner(bytes.NewReader(body))
			sc.Buffer(nil, 16<<20)
			var sent int
			for sc.Scan() {
				var tr opshttp.TruncatedJSON
				if json.Unmarshal(sc.Bytes(), &tr) == nil && tr.Truncated.Limit != "" {
					if tr.Truncated.Limit != "export_bytes" || tr.Truncated.Max != budget || tr.Truncated.Bytes != int64(sent) {
						t.Fatalf("truncation line %s after %d bytes", sc.Bytes(), sent)
					}
					u, _ := url.Parse(tr.Truncated.Next)
					next = u.RequestURI()
					continue
				}
				var x opshttp.ExportJSON
				if err := json.Unmarshal(sc.Bytes(), &x); err != nil {
					t.Fatalf("line: %v", err)
				}
				seen[x.Thread.ID]++
				sent += len(sc.Bytes()) + 1
				biggest = max(biggest, len(sc.Bytes())+1)
			}
			if next != "" && sent > budget+biggest {
				t.Fatalf("a response of %d bytes (budget %d, largest thread %d)", sent, budget, biggest)
			}
			if rounds > 20 {
				t.Fatal("the continuations do not end")
			}
		}
		for id := range want {
			if seen[id] != 1 {
				t.Fatalf("thread %s exported %d times over %d responses", id, seen[id], rounds)
			}
		}
		if rounds < 2 {
			t.Fatalf("%d responses: the budget was never reached", rounds)
		}
		t.Logf("%s: 12 threads of ~%d bytes in %d responses of at most %d bytes", d, biggest, rounds, budget+biggest)
		resp, body := e.Do(t, http.MethodGet, "/v1/threads/export?after=nonsense", key, nil)
		wantProblem(t, resp, body, http.StatusBadRequest, "validation_failed")
	})
}

// Issue 29 item 2: a refusal's message reaches a client that shows only
// the status line (the Node SDK prints `${status} ${statusText}`): it is
// the reason phrase of the 422, and the body is the usual one.
func TestRefusalMessageInStatusLine(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, key := e.NewUser(t, domain.RoleViewer)
		resp, body := e.Do(t, http.MethodPost, "/graphql", key, map[string]any{"query": `{ stepHistory(threadId: "t", stepName: "s", limit: 1000) { attempt context } }`})
		want := "422 operation has complexity 2001, which exceeds the limit of 1000"
		if resp.StatusCode != http.StatusUnprocessableEntity || resp.Status != want {
			t.Fatalf("status line %q, want %q", resp.Status, want)
		}
		var r gqlResult
		if err := json.Unmarshal(body, &r); err != nil || r.Errors[0].Extensions["code"] != "COMPLEXITY_LIMIT_EXCEEDED" ||
			resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Fatalf("body %s (%v), headers %v", body, err, resp.Header)
		}
		// The next request on a new connection is served as usual.
		if st, _, raw := gqlPost(t, e, key, `{ threads(limit: 1) { threads { id } } }`, nil); st != http.StatusOK {
			t.Fatalf("after a refusal: %d %s", st, raw)
		}
		resp, _ = e.Do(t, http.MethodPost, "/graphql", "", map[string]any{"query": `{ threads { totalCount } }`})
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Status, "401 ") || resp.Status == "401 Unauthorized" {
			t.Fatalf("unauthenticated: %q", resp.Status)
		}
	})
}

// MCP tool calls pass the read gate too (ToolCost points each, and the
// per-principal and engine-wide read places): with a budget of 1,000 points
// and no refill to speak of, the 101st call of one principal is refused
// with limit_exceeded, while another principal's calls still run.
func TestMCPToolsPassTheReadGate(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		e := enginetest.Start(t, d, enginetest.WithConfig(func(c *config.Config) {
			c.Limits.GraphQL.PointsPerSecond, c.Limits.GraphQL.PointsBurst = 1, 1000
		}))
		_, key := e.NewUser(t, domain.RoleViewer)
		cs := mustConnect(t, e, key)
		refusedAt := 0
		for i := 1; i <= 120 && refusedAt == 0; i++ {
			if res := callTool(t, cs, "search_threads", map[string]any{}); res.IsError {
				if !strings.Contains(resultText(res), "limit_exceeded") && !strings.Contains(resultText(res), "read budget") {
					t.Fatalf("call %d refused with %s", i, resultText(res))
				}
				refusedAt = i
			}
		}
		// 1,000 points at 10 a call, plus what a second of refill may add.
		if refusedAt < 100 || refusedAt > 102 {
			t.Fatalf("first refusal at call %d, want the 101st", refusedAt)
		}
		other := mustConnect(t, e, e.AdminKey)
		if res := callTool(t, other, "search_threads", map[string]any{}); res.IsError {
			t.Fatalf("another principal refused: %s", resultText(res))
		}
	})
}
