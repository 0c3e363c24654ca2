package graphqlapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/graphqlapi/graphqltest"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/readmodel"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
)

type fixture struct {
	db         *sqldb.DB
	h          *Handler
	threads    *threadsapp.Module
	ctx        context.Context // admin principal
	statements atomic.Int64
}

var testSecret = []byte("test-hash-chain-secret-0123456789abcdef")

func newFixture(t testing.TB, d sqldb.Dialect) *fixture {
	t.Helper()
	db := sqldbtest.Open(t, d)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f := &fixture{db: db}
	f.threads = threadsapp.New(threadstore.New(db), nil, nil, testSecret, log)
	store := threadquery.New(db)
	store.OnQuery(func(string, []any) { f.statements.Add(1) })
	q := readmodel.New(readmodel.Deps{Store: store, ChainSecrets: readmodel.ChainSecrets(testSecret)})
	h, err := New(q, log)
	if err != nil {
		t.Fatal(err)
	}
	f.h = h
	f.ctx = authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u-admin", Role: domain.RoleAdmin})
	return f
}

func (f *fixture) seed(t testing.TB, tag string, steps int) graphqltest.Seeded {
	t.Helper()
	s, err := graphqltest.SeedThread(f.ctx, f.threads, tag, steps)
	if err != nil {
		t.Fatalf("seed: %v", err)
	}
	return s
}

type result struct {
	Data       map[string]any `json:"data"`
	Errors     []gqlError     `json:"errors"`
	Extensions map[string]any `json:"extensions"`
}

type gqlError struct {
	Message    string         `json:"message"`
	Extensions map[string]any `json:"extensions"`
}

func (f *fixture) exec(t testing.TB, query string, vars map[string]any) (result, int) {
	t.Helper()
	return f.execCtx(t, f.ctx, query, vars)
}

func (f *fixture) execCtx(t testing.TB, ctx context.Context, query string, vars map[string]any) (result, int) {
	t.Helper()
	// Round-trip variables through JSON as an HTTP body would.
	b, _ := json.Marshal(vars)
	var v map[string]any
	_ = json.Unmarshal(b, &v)
	res, status := f.h.Execute(ctx, Request{Query: query, Variables: v})
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var r result
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return r, status
}

func TestSDKQueries(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		f := newFixture(t, d)
		s := f.seed(t, "1", 3)
		child := f.seed(t, "2", 1)
		if err := graphqltest.Link(f.ctx, f.threads, s.ID, child.ID); err != nil {
			t.Fatal(err)
		}
		if err := graphqltest.InsertValidation(f.ctx, f.db, s, time.Now()); err != nil {
			t.Fatal(err)
		}
		for _, c := range graphqltest.SDKCases(s.ID, s.StepName, s.StepKey, s.RefKey, s.RefValue) {
			t.Run(c.Name, func(t *testing.T) {
				r, status := f.exec(t, c.Query, c.Variables)
				if status != http.StatusOK || len(r.Errors) > 0 {
					t.Fatalf("status %d errors %+v", status, r.Errors)
				}
				cost, _ := r.Extensions["cost"].(float64)
				if cost <= 0 || cost > domain.MaxQueryComplexity {
					t.Fatalf("cost %v", r.Extensions["cost"])
				}
				checkSDKResult(t, c.Name, r.Data, s, child)
			})
		}
	})
}

func checkSDKResult(t *testing.T, name string, data map[string]any, s, child graphqltest.Seeded) {
	t.Helper()
	op := strings.Split(name, "/")[0]
	thread, _ := data["thread"].(map[string]any)
	steps := func() []any {
		if thread == nil {
			t.Fatalf("thread is null: %v", data)
		}
		l, _ := thread["steps"].([]any)
		return l
	}
	switch op {
	case "GetThread", "GetCompleteThread":
		if thread["id"] != s.ID || thread["companyId"] != CompanyID || thread["status"] != "active" {
			t.Fatalf("thread %v", thread)
		}
		var refs map[string]string
		refStr, ok := thread["refs"].(string)
		if !ok || json.Unmarshal([]byte(refStr), &refs) != nil || refs[s.RefKey] != s.RefValue {
			t.Fatalf("refs must be a JSON-encoded string, got %#v", thread["refs"])
		}
		if _, err := time.Parse(time.RFC3339Nano, thread["startedAt"].(string)); err != nil {
			t.Fatalf("startedAt: %v", err)
		}
		if op == "GetCompleteThread" {
			st := steps()
			if len(st) != 3 {
				t.Fatalf("steps %d", len(st))
			}
			first := st[0].(map[string]any)
			h := first["history"].([]any)
			if first["stepName"] != "step-0" || first["retryCount"] != float64(1) || len(h) != 2 {
				t.Fatalf("step-0 %v", first)
			}
			newest, oldest := h[0].(map[string]any), h[1].(map[string]any)
			if newest["status"] != "success" || oldest["status"] != "failed" || oldest["error"] != "card declined" || newest["error"] != nil {
				t.Fatalf("history must be newest first with error only on failures: %v", h)
			}
			if oldest["duration"] != float64(250) || first["verified"] != true {
				t.Fatalf("duration/verified: %v %v", oldest, first)
			}
			v := thread["validationResults"].([]any)
			if len(v) != 1 || v[0].(map[string]any)["totalValidations"] != float64(2) || v[0].(map[string]any)["hasCriticalViolation"] != true {
				t.Fatalf("validations %v", v)
			}
		}
	case "GetThreadByRef", "GetThreadsByRef":
		conn := data["threadsByRef"].(map[string]any)
		l := conn["threads"].([]any)
		if len(l) != 1 || l[0].(map[string]any)["id"] != s.ID {
			t.Fatalf("by ref %v", conn)
		}
		if tc, ok := conn["totalCount"]; ok && tc != float64(1) {
			t.Fatalf("totalCount %v", tc)
		}
	case "GetThreadChain":
		l := data["threadChain"].([]any)
		if len(l) != 2 || l[0].(map[string]any)["id"] != s.ID || l[1].(map[string]any)["id"] != child.ID {
			t.Fatalf("chain %v", l)
		}
	case "GetThreadSteps":
		st := steps()
		want := 3
		if strings.HasSuffix(name, "nameKey") {
			want = 1
		}
		if len(st) != want {
			t.Fatalf("steps %d want %d: %v", len(st), want, st)
		}
		h := st[0].(map[string]any)["history"].([]any)
		if len(h) != 1 || h[0].(map[string]any)["status"] != "success" {
			t.Fatalf("lastExecution must be the newest attempt: %v", h)
		}
	case "GetThreadValidations":
		v := thread["validationResults"].([]any)
		if len(v) != 1 {
			t.Fatalf("validations %v", v)
		}
		issues := v[0].(map[string]any)["validations"].([]any)
		if len(issues) != 2 || issues[0].(map[string]any)["type"] != "invalid_transition" {
			t.Fatalf("issues %v", issues)
		}
	case "GetStepSubSteps":
		st := steps()
		if len(st) != 1 {
			t.Fatalf("steps %v", st)
		}
		subs := st[0].(map[string]any)["subSteps"].([]any)
		if len(subs) != 2 {
			t.Fatalf("sub-steps of both attempts: %v", subs)
		}
		var payload map[string]any
		if p, ok := subs[0].(map[string]any)["payload"].(string); !ok || json.Unmarshal([]byte(p), &payload) != nil {
			t.Fatalf("payload must be a JSON string: %v", subs[0])
		}
	case "GetStepHistory":
		h := data["stepHistory"].([]any)
		if len(h) != 2 || h[0].(map[string]any)["attempt"] != float64(2) {
			t.Fatalf("history %v", h)
		}
	default:
		t.Fatalf("unchecked case %s", name)
	}
}

func TestComplexityBoundary(t *testing.T) {
	f := newFixture(t, sqldb.SQLite)
	s := f.seed(t, "1", 1)
	// stepHistory(limit: L){attempt} costs 1 + L.
	for _, c := range []struct {
		limit, cost int
		ok          bool
	}{{998, 999, true}, {999, 1000, true}, {1000, 1001, false}} {
		q := fmt.Sprintf(`{ stepHistory(threadId: %q, stepName: "step-0", limit: %d) { attempt } }`, s.ID, c.limit)
		r, status := f.exec(t, q, nil)
		if c.ok {
			if status != http.StatusOK || len(r.Errors) > 0 || r.Extensions["cost"] != float64(c.cost) {
				t.Fatalf("cost %d: status %d %+v %v", c.cost, status, r.Errors, r.Extensions)
			}
			continue
		}
		want := fmt.Sprintf("operation has complexity %d, which exceeds the limit of 1000", c.cost)
		if status != http.StatusUnprocessableEntity || len(r.Errors) != 1 || r.Errors[0].Message != want ||
			r.Errors[0].Extensions["code"] != "COMPLEXITY_LIMIT_EXCEEDED" ||
			r.Errors[0].Extensions["complexity"] != float64(c.cost) || r.Errors[0].Extensions["limit"] != float64(1000) ||
			r.Data != nil || r.Extensions != nil {
			t.Fatalf("cost %d: status %d %+v", c.cost, status, r)
		}
	}
	// The same limit through a variable.
	r, status := f.exec(t, `query($n: Int){ stepHistory(threadId: "x", stepName: "s", limit: $n) { attempt } }`, map[string]any{"n": 1000})
	if status != http.StatusUnprocessableEntity || r.Errors[0].Extensions["complexity"] != float64(1001) {
		t.Fatalf("variable limit: %d %+v", status, r)
	}
}

func TestComplexityRejectedBeforeResolvers(t *testing.T) {
	f := newFixture(t, sqldb.SQLite)
	f.statements.Store(0)
	r, status := f.exec(t, `{ threads(limit: 100) { threads { notifications(options: { limit: 100 }) { message } } } }`, nil)
	if status != http.StatusUnprocessableEntity || r.Errors[0].Extensions["code"] != "COMPLEXITY_LIMIT_EXCEEDED" {
		t.Fatalf("%d %+v", status, r)
	}
	if n := f.statements.Load(); n != 0 {
		t.Fatalf("%d statements ran for a refused operation", n)
	}
}

// An operation that fits until its threads are read is refused after the
// root page is read and before any nested data is loaded, with a hint.
func TestComplexityOfWhatIsRead(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		f := newFixture(t, d)
		for i := 0; i < 12; i++ {
			f.seed(t, fmt.Sprint(i), 30)
		}
		q := `{ threads(limit: 100) { threads { steps { history(limit: 1000) { attempt } } } } }`
		if cost, err := f.h.Cost(Request{Query: q}); err != nil || cost != 2+100*(1+1*(1+1)) {
			t.Fatalf("static cost %d %v", cost, err)
		}
		f.statements.Store(0)
		r, status := f.exec(t, q, nil)
		// 12 threads of 31 recorded steps: 31 step items, one attempt each on average.
		want := 2 + 100*3 + 12*(31*2-2)
		if status != http.StatusUnprocessableEntity || len(r.Errors) != 1 ||
			r.Errors[0].Extensions["code"] != "COMPLEXITY_LIMIT_EXCEEDED" || r.Errors[0].Extensions["complexity"] != float64(want) ||
			!strings.HasPrefix(r.Errors[0].Message, fmt.Sprintf("operation has complexity %d, which exceeds the limit of 1000; ", want)) ||
			!strings.Contains(r.Errors[0].Message, "stepHistory(") {
			t.Fatalf("%d %+v", status, r)
		}
		// Only the page was read (its rows and its count).
		if n := f.statements.Load(); n > 2 {
			t.Fatalf("%d statements ran for an operation refused after its page", n)
		}
		// Ten threads fit.
		r, status = f.exec(t, `{ threads(limit: 10) { threads { steps { history(limit: 1000) { attempt } } } } }`, nil)
		if want := 2 + 10*3 + 10*(31*2-2); status != 200 || len(r.Errors) > 0 || r.Extensions["cost"] != float64(want) {
			t.Fatalf("%d %+v want cost %d", status, r, want)
		}
		if n := f.h.misses.Load(); n != 0 {
			t.Fatalf("%d root reads were not priced", n)
		}
	})
}

// The number of statements must not depend on list sizes.
func TestNoNPlusOne(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		f := newFixture(t, d)
		queries := []struct {
			name, q string
			page    int
			// counted: statements the big page adds because its total is
			// counted (the small page holds every match: its own total).
			counted int64
		}{
			{"threads(limit:100) steps history", `{ threads(limit: 100) { totalCount threads { steps { history(limit: 1) { attempt } } } } }`, 100, 1},
			{"every batched field", `{ threads(limit: 5) { threads { id refs hashChainVerified notificationSummary { totalNotifications }
  validationResults { validationId } notifications { message } threadChain { id }
  steps { stepName verified subSteps { name } } } } }`, 5, 0},
		}
		count := func(q string) (int64, int) {
			f.statements.Store(0)
			r, status := f.exec(t, q, nil)
			if status != http.StatusOK || len(r.Errors) > 0 {
				t.Fatalf("%d %+v", status, r.Errors)
			}
			return f.statements.Load(), len(r.Data["threads"].(map[string]any)["threads"].([]any))
		}
		small := map[string]int64{}
		for i := 0; i < 2; i++ {
			f.seed(t, fmt.Sprint(i), 2)
		}
		for _, c := range queries {
			n, got := count(c.q)
			if got != 2 {
				t.Fatalf("%s: %d threads", c.name, got)
			}
			small[c.name] = n
		}
		for i := 2; i < 110; i++ {
			f.seed(t, fmt.Sprint(i), 3)
		}
		for _, c := range queries {
			n, got := count(c.q)
			if got != c.page {
				t.Fatalf("%s: %d threads, want %d", c.name, got, c.page)
			}
			if n != small[c.name]+c.counted || n > 12 {
				t.Fatalf("%s: %d statements for 2 threads, %d for %d threads", c.name, small[c.name], n, c.page)
			}
			t.Logf("%s: %d statements for %d threads", c.name, n, c.page)
		}
	})
}

func TestErrorsAreCoded(t *testing.T) {
	f := newFixture(t, sqldb.SQLite)
	s := f.seed(t, "1", 1)
	cases := []struct {
		name, query string
		vars        map[string]any
		status      int
		code        string
	}{
		{"syntax", `{ thread(id: "x") { id `, nil, 422, CodeParseFailed},
		{"bad character", `{ thread(id: "x") { id } } ^`, nil, 422, CodeParseFailed},
		{"unknown field", `{ thread(id: "x") { nope } }`, nil, 422, CodeValidationFailed},
		{"unknown argument", `{ threads(first: 3) { totalCount } }`, nil, 422, CodeValidationFailed},
		{"wrong variable type", `query($l: Int){ threads(limit: $l) { totalCount } }`, map[string]any{"l": "ten"}, 422, CodeBadUserInput},
		{"variable declared wrongly", `query($l: String){ threads(limit: $l) { totalCount } }`, map[string]any{"l": "1"}, 422, CodeValidationFailed},
		{"missing variable", `query($id: ID!){ thread(id: $id) { id } }`, nil, 422, CodeValidationFailed},
		{"empty", ``, nil, 400, CodeBadRequest},
		{"two operations unnamed", `query A { thread(id: "x") { id } } query B { thread(id: "y") { id } }`, nil, 422, CodeValidationFailed},
		{"mutation", `mutation { thread(id: "x") { id } }`, nil, 422, CodeValidationFailed},
		{"bad date", `{ threads(startedAfter: "yesterday") { totalCount } }`, nil, 200, string(domain.CodeValidationFailed)},
		{"bad depth", fmt.Sprintf(`{ threadChain(rootId: %q, maxDepth: 11) { id } }`, s.ID), nil, 200, string(domain.CodeValidationFailed)},
		{"too deep", `{ thread(id: "x") { threadChain { threadChain { threadChain { threadChain { threadChain { threadChain { threadChain { threadChain { threadChain { threadChain { threadChain { id } } } } } } } } } } } } }`, nil, 422, CodeValidationFailed},
		{"too long", `{ thread(id: "x") { id } }` + strings.Repeat(" ", MaxQueryBytes), nil, 413, CodeQueryTooLarge},
		{"contract missing", `{ contractGraph(name: "nope") { parties } }`, nil, 200, string(domain.CodeNotFound)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, status := f.exec(t, c.query, c.vars)
			if status != c.status || len(r.Errors) == 0 {
				t.Fatalf("status %d (want %d) %+v", status, c.status, r)
			}
			for _, e := range r.Errors {
				if e.Extensions["code"] != c.code {
					t.Fatalf("code %v want %s: %+v", e.Extensions["code"], c.code, r.Errors)
				}
				if strings.Contains(e.Message, "SQL") || strings.Contains(e.Message, "validation_failed:") {
					t.Fatalf("leaky message %q", e.Message)
				}
			}
		})
	}
	// A thread that does not exist is null, without errors.
	r, status := f.exec(t, graphqltest.GetThread, map[string]any{"id": "missing"})
	if status != 200 || len(r.Errors) > 0 || r.Data["thread"] != nil {
		t.Fatalf("missing thread: %d %+v", status, r)
	}
	// Without a principal nothing runs.
	r, status = f.execCtx(t, context.Background(), graphqltest.GetThread, map[string]any{"id": s.ID})
	if status != 401 || r.Errors[0].Extensions["code"] != string(domain.CodeUnauthenticated) {
		t.Fatalf("anonymous: %d %+v", status, r)
	}
}

func TestViewerMayQuery(t *testing.T) {
	f := newFixture(t, sqldb.SQLite)
	s := f.seed(t, "1", 1)
	viewer := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u-view", Role: domain.RoleViewer})
	r, status := f.execCtx(t, viewer, graphqltest.GetThread, map[string]any{"id": s.ID})
	if status != 200 || len(r.Errors) > 0 || r.Data["thread"].(map[string]any)["id"] != s.ID {
		t.Fatalf("viewer: %d %+v", status, r)
	}
}

func TestFiltersAndPaging(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		f := newFixture(t, d)
		var ids []string
		for i := 0; i < 5; i++ {
			ids = append(ids, f.seed(t, fmt.Sprint(i), 1).ID)
			time.Sleep(2 * time.Millisecond)
		}
		if _, err := f.threads.Application().Commands.EndThread.Handle(f.ctx, threadsapp.EndThreadInput{ThreadID: ids[0], Status: "completed", Reason: "done"}); err != nil {
			t.Fatal(err)
		}
		get := func(q string) map[string]any {
			t.Helper()
			r, status := f.exec(t, q, nil)
			if status != 200 || len(r.Errors) > 0 {
				t.Fatalf("%s: %d %+v", q, status, r.Errors)
			}
			return r.Data
		}
		// Cursor paging: the pages after endCursor, then back before
		// startCursor, read the same list as one page (newest first).
		var walked []string
		after := ""
		for i := 0; i < 5; i++ {
			conn := get(fmt.Sprintf(`{ threads(limit: 2, after: %q) { totalCount totalCountIsExact pageInfo { hasNextPage hasPreviousPage startCursor endCursor } threads { id } } }`, after))["threads"].(map[string]any)
			pi := conn["pageInfo"].(map[string]any)
			if conn["totalCount"] != float64(5) || conn["totalCountIsExact"] != true || pi["hasPreviousPage"] != (after != "") {
				t.Fatalf("page %d: %v", i, conn)
			}
			for _, th := range conn["threads"].([]any) {
				walked = append(walked, th.(map[string]any)["id"].(string))
			}
			if pi["hasNextPage"] != true {
				before := pi["startCursor"].(string)
				prev := get(fmt.Sprintf(`{ threads(limit: 2, before: %q) { pageInfo { hasNextPage } threads { id } } }`, before))["threads"].(map[string]any)
				pt := prev["threads"].([]any)
				if len(pt) != 2 || pt[0].(map[string]any)["id"] != ids[2] || pt[1].(map[string]any)["id"] != ids[1] {
					t.Fatalf("before the last page: %v", prev)
				}
				break
			}
			after = pi["endCursor"].(string)
		}
		if want := []string{ids[4], ids[3], ids[2], ids[1], ids[0]}; !slices.Equal(walked, want) {
			t.Fatalf("cursor walk %v, want %v", walked, want)
		}
		// totalCount costs one statement, only when selected, once however
		// many of its fields are.
		stmts := func(q string) int64 {
			t.Helper()
			before := f.statements.Load()
			get(q)
			return f.statements.Load() - before
		}
		plain := stmts(`{ threads(limit: 2) { threads { id } } }`)
		if n := stmts(`{ threads(limit: 2) { totalCount threads { id } } }`); n != plain+1 {
			t.Fatalf("with totalCount: %d statements, without: %d", n, plain)
		}
		if n := stmts(`{ threads(limit: 2) { totalCount totalCountIsExact threads { id } } }`); n != plain+1 {
			t.Fatalf("with totalCount and totalCountIsExact: %d statements, without: %d", n, plain)
		}
		// A first page that holds every match is its own total: no count
		// (a ref search would read its trigram candidates twice).
		whole := stmts(`{ threads(limit: 10) { threads { id } } }`)
		if n := stmts(`{ threads(limit: 10) { totalCount totalCountIsExact threads { id } } }`); n != whole {
			t.Fatalf("a page of every match with totalCount: %d statements, without: %d", n, whole)
		}
		if conn := get(`{ threads(limit: 10) { totalCount totalCountIsExact } }`)["threads"].(map[string]any); conn["totalCount"] != float64(5) || conn["totalCountIsExact"] != true {
			t.Fatalf("a page of every match: %v", conn)
		}
		// A cursor of another order, a made-up cursor, both cursors and a
		// deep offset are refused with a coded error.
		for _, q := range []string{
			fmt.Sprintf(`{ threads(orderBy: DURATION, after: %q) { totalCount } }`, after),
			`{ threads(after: "bm90IGEgY3Vyc29y") { totalCount } }`,
			fmt.Sprintf(`{ threads(after: %q, before: %q) { totalCount } }`, after, after),
			`{ threads(offset: 10001) { totalCount } }`,
		} {
			r, _ := f.exec(t, q, nil)
			if len(r.Errors) != 1 || r.Errors[0].Extensions["code"] != string(domain.CodeValidationFailed) {
				t.Fatalf("%s: %+v", q, r.Errors)
			}
		}
		conn := get(`{ threads(limit: 2, offset: 1) { totalCount threads { id } } }`)["threads"].(map[string]any)
		l := conn["threads"].([]any)
		if conn["totalCount"] != float64(5) || len(l) != 2 || l[0].(map[string]any)["id"] != ids[3] || l[1].(map[string]any)["id"] != ids[2] {
			t.Fatalf("newest first, paged: %v", conn)
		}
		conn = get(`{ threads(limit: 2, offset: 10) { totalCount threads { id } } }`)["threads"].(map[string]any)
		if conn["totalCount"] != float64(5) || len(conn["threads"].([]any)) != 0 {
			t.Fatalf("past the end: %v", conn)
		}
		conn = get(`{ threads(status: "completed") { totalCount threads { id completedAt } } }`)["threads"].(map[string]any)
		if conn["totalCount"] != float64(1) || conn["threads"].([]any)[0].(map[string]any)["completedAt"] == nil {
			t.Fatalf("status: %v", conn)
		}
		future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		conn = get(fmt.Sprintf(`{ threads(startedAfter: %q) { totalCount } }`, future))["threads"].(map[string]any)
		if conn["totalCount"] != float64(0) {
			t.Fatalf("startedAfter: %v", conn)
		}
		conn = get(fmt.Sprintf(`{ threads(startedBefore: %q, limit: 500) { totalCount threads { id } } }`, future))["threads"].(map[string]any)
		if conn["totalCount"] != float64(5) {
			t.Fatalf("startedBefore: %v", conn)
		}
		conn = get(`{ threadsByRef(refValue: "o-1") { totalCount threads { id } } }`)["threadsByRef"].(map[string]any)
		if conn["totalCount"] != float64(1) || conn["threads"].([]any)[0].(map[string]any)["id"] != ids[1] {
			t.Fatalf("ref value is a case-insensitive match: %v", conn)
		}
		conn = get(`{ threadsByRef(refKey: "other", refValue: "O-1") { totalCount } }`)["threadsByRef"].(map[string]any)
		if conn["totalCount"] != float64(0) {
			t.Fatalf("ref key: %v", conn)
		}
		conn = get(`{ threads(actor: "u-admin") { totalCount } }`)["threads"].(map[string]any)
		if conn["totalCount"] != float64(5) {
			t.Fatalf("actor: %v", conn)
		}
		conn = get(`{ threadsByContract(contractName: "none") { totalCount } }`)["threadsByContract"].(map[string]any)
		if conn["totalCount"] != float64(0) {
			t.Fatalf("contract: %v", conn)
		}
		v := get(fmt.Sprintf(`{ verifyThreadIntegrity(threadId: %q) { verified totalEvents brokenAt error lastVerifiedAt } }`, ids[1]))["verifyThreadIntegrity"].(map[string]any)
		if v["verified"] != true || v["totalEvents"] != float64(2) || v["brokenAt"] != nil {
			t.Fatalf("integrity: %v", v)
		}
		// Tampering with a stored context breaks the chain.
		if _, err := f.db.Exec(f.db.Rebind(`UPDATE thread_activities SET context = '{"orderId":"forged"}' WHERE thread_id = ? AND seq = 1`), ids[1]); err != nil {
			t.Fatal(err)
		}
		v = get(fmt.Sprintf(`{ verifyThreadIntegrity(threadId: %q) { verified brokenAt error } thread(id: %q) { hashChainVerified steps { verified verificationError } } }`, ids[1], ids[1]))
		st := v["verifyThreadIntegrity"].(map[string]any)
		if st["verified"] != false || st["brokenAt"] == nil || st["error"] == nil {
			t.Fatalf("tampered: %v", v)
		}
		th := v["thread"].(map[string]any)
		if th["hashChainVerified"] != false || th["steps"].([]any)[0].(map[string]any)["verified"] != false {
			t.Fatalf("tampered thread: %v", th)
		}
	})
}

func TestExplorerAndHTTP(t *testing.T) {
	f := newFixture(t, sqldb.SQLite)
	// Introspection (used by the explorer) fits under the limit.
	r, status := f.exec(t, `{ __schema { types { name kind description fields { name description type { kind name ofType { kind name ofType { kind name ofType { kind name } } } } args { name defaultValue type { kind name ofType { kind name ofType { kind name } } } } } inputFields { name type { kind name ofType { kind name ofType { kind name } } } } } } }`, nil)
	if status != 200 || len(r.Errors) > 0 {
		t.Fatalf("introspection: %d %+v", status, r.Errors)
	}
	if !strings.Contains(string(explorerHTML), "__schema") {
		t.Fatal("explorer page does not load the schema")
	}
}

func TestExecuteJSONAppliesTheLimit(t *testing.T) {
	f := newFixture(t, sqldb.SQLite)
	b, err := f.h.ExecuteJSON(f.ctx, `{ stepHistory(threadId: "t", stepName: "s", limit: 1000) { attempt } }`, "", nil)
	want := `{"errors":[{"message":"operation has complexity 1001, which exceeds the limit of 1000","extensions":{"code":"COMPLEXITY_LIMIT_EXCEEDED","complexity":1001,"limit":1000,"reason":"COMPLEXITY_LIMIT_EXCEEDED"}}]}`
	if err != nil || string(b) != want {
		t.Fatalf("%s %v", b, err)
	}
	// totalCount costs its count of every match (domain.CountPoints).
	b, err = f.h.ExecuteJSON(f.ctx, `query Q { threads { totalCount } }`, "Q", nil)
	if err != nil || string(b) != `{"data":{"threads":{"totalCount":0}},"extensions":{"cost":27}}` {
		t.Fatalf("%s %v", b, err)
	}
}
