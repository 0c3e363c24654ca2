package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/graphqlapi/graphqltest"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

type gqlResult struct {
	Data       map[string]any `json:"data"`
	Errors     []gqlErr       `json:"errors"`
	Extensions map[string]any `json:"extensions"`
}

type gqlErr struct {
	Message    string         `json:"message"`
	Extensions map[string]any `json:"extensions"`
}

// gqlPost sends a GraphQL request the way the SDKs do (Bearer key, JSON).
func gqlPost(t *testing.T, e *enginetest.Engine, key, query string, vars map[string]any) (int, gqlResult, []byte) {
	t.Helper()
	resp, body := e.Do(t, http.MethodPost, "/graphql", key, map[string]any{"query": query, "variables": vars})
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("content type %q: %s", ct, body)
	}
	var r gqlResult
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("not JSON: %s", body)
	}
	return resp.StatusCode, r, body
}

func adminCtx(e *enginetest.Engine) context.Context {
	return authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: e.Admin.ID, Role: domain.RoleAdmin})
}

func TestGraphQLSDKQueries(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		ctx := adminCtx(e)
		s, err := graphqltest.SeedThread(ctx, e.Server.Threads, "sdk", 3)
		if err != nil {
			t.Fatal(err)
		}
		child, err := graphqltest.SeedThread(ctx, e.Server.Threads, "child", 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := graphqltest.Link(ctx, e.Server.Threads, s.ID, child.ID); err != nil {
			t.Fatal(err)
		}
		if err := graphqltest.InsertValidation(ctx, e.Server.DB, s, time.Now()); err != nil {
			t.Fatal(err)
		}
		_, viewerKey := e.NewUser(t, domain.RoleViewer)
		for _, c := range graphqltest.SDKCases(s.ID, s.StepName, s.StepKey, s.RefKey, s.RefValue) {
			for _, who := range []struct{ name, key string }{{"admin", e.AdminKey}, {"viewer", viewerKey}} {
				status, r, body := gqlPost(t, e, who.key, c.Query, c.Variables)
				if status != http.StatusOK || len(r.Errors) > 0 || r.Data == nil {
					t.Fatalf("%s as %s: %d %s", c.Name, who.name, status, body)
				}
				if cost, _ := r.Extensions["cost"].(float64); cost <= 0 || cost > 1000 {
					t.Fatalf("%s: cost %v", c.Name, r.Extensions["cost"])
				}
			}
		}
		// The Node SDK parses refs and reads lastExecution = history[0].
		_, r, _ := gqlPost(t, e, e.AdminKey, graphqltest.GetThreadSteps, map[string]any{"threadId": s.ID, "stepName": nil, "idempotencyKey": nil, "status": nil})
		steps := r.Data["thread"].(map[string]any)["steps"].([]any)
		h := steps[0].(map[string]any)["history"].([]any)
		if len(steps) != 3 || h[0].(map[string]any)["attempt"] != float64(2) || steps[0].(map[string]any)["verified"] != true {
			t.Fatalf("steps: %v", steps)
		}
		_, r, _ = gqlPost(t, e, e.AdminKey, graphqltest.GetThread, map[string]any{"id": s.ID})
		var refs map[string]string
		if err := json.Unmarshal([]byte(r.Data["thread"].(map[string]any)["refs"].(string)), &refs); err != nil || refs["orderId"] != "O-sdk" {
			t.Fatalf("refs: %v", r.Data)
		}
	})
}

func TestGraphQLAuth(t *testing.T) {
	t.Parallel()
	e := enginetest.Start(t, "sqlite")
	q := map[string]any{"query": `{ threads { totalCount } }`}
	// X-API-Key works like Bearer.
	resp, body := e.DoWith(t, http.MethodPost, "/graphql", q, func(r *http.Request) { r.Header.Set("X-API-Key", e.AdminKey) })
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"totalCount":0`) {
		t.Fatalf("X-API-Key: %d %s", resp.StatusCode, body)
	}
	// No credential, a bad key: GraphQL-shaped 401.
	for _, key := range []string{"", "td_not_a_key"} {
		resp, body = e.Do(t, http.MethodPost, "/graphql", key, q)
		var r gqlResult
		_ = json.Unmarshal(body, &r)
		if resp.StatusCode != http.StatusUnauthorized || len(r.Errors) != 1 || r.Errors[0].Extensions["code"] != "unauthenticated" {
			t.Fatalf("key %q: %d %s", key, resp.StatusCode, body)
		}
	}
	// Members and viewers (see TestGraphQLSDKQueries) may query.
	_, key := e.NewUser(t, domain.RoleMember)
	if status, _, body := gqlPost(t, e, key, `{ threads { totalCount } }`, nil); status != http.StatusOK {
		t.Fatalf("member: %d %s", status, body)
	}
}

func TestGraphQLComplexityLimit(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		for _, c := range []struct {
			limit, cost int
		}{{998, 999}, {999, 1000}} {
			status, r, body := gqlPost(t, e, e.AdminKey, fmt.Sprintf(`{ stepHistory(threadId: "t", stepName: "s", limit: %d) { attempt } }`, c.limit), nil)
			if status != http.StatusOK || r.Extensions["cost"] != float64(c.cost) {
				t.Fatalf("cost %d: %d %s", c.cost, status, body)
			}
		}
		status, _, body := gqlPost(t, e, e.AdminKey, `{ stepHistory(threadId: "t", stepName: "s", limit: 1000) { attempt } }`, nil)
		want := `{"errors":[{"message":"operation has complexity 1001, which exceeds the limit of 1000","extensions":{"code":"COMPLEXITY_LIMIT_EXCEEDED","complexity":1001,"limit":1000,"reason":"COMPLEXITY_LIMIT_EXCEEDED"}}]}`
		if status != http.StatusUnprocessableEntity || string(body) != want {
			t.Fatalf("1001: %d %s", status, body)
		}
		// The documented example: 10 threads with their steps, on an engine
		// without threads (each thread read would add its steps beyond one).
		status, r, body := gqlPost(t, e, e.AdminKey, `{ threads(limit: 10) { threads { steps { stepName } } } }`, nil)
		if status != http.StatusOK || r.Extensions["cost"] != float64(22) {
			t.Fatalf("example: %d %s", status, body)
		}
		// The fragment diamond (2^40 selections in 1.7 KB) is refused at once
		// (expanded it would take hours: the minute only bounds a hang).
		start := time.Now()
		status, r, body = gqlPost(t, e, e.AdminKey, graphqltest.Diamond(40), map[string]any{"id": "t"})
		if status != http.StatusUnprocessableEntity || r.Errors[0].Extensions["code"] != "COMPLEXITY_LIMIT_EXCEEDED" || time.Since(start) > time.Minute {
			t.Fatalf("diamond: %d %s after %v", status, body, time.Since(start))
		}
	})
}

func TestGraphQLMalformedNever500(t *testing.T) {
	t.Parallel()
	e := enginetest.Start(t, "sqlite")
	bodies := []string{`{`, `[]`, `{"query": 5}`, `{"query": "{ thread(id: \"x\") { id } "}`, `{"query": "{ nope }"}`,
		`{"query": "query($id: ID!){ thread(id: $id) { id } }", "variables": {"id": {"a": 1}}}`,
		`{"query": "{ threads(limit: \"x\") { totalCount } }"}`, `{"query": "{ __typename }"}`}
	for _, b := range bodies {
		resp, body := e.DoWith(t, http.MethodPost, "/graphql", b, func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+e.AdminKey)
			r.Header.Set("Content-Type", "application/json")
		})
		var r gqlResult
		if resp.StatusCode >= 500 || json.Unmarshal(body, &r) != nil {
			t.Fatalf("%s: %d %s", b, resp.StatusCode, body)
		}
		for _, er := range r.Errors {
			if er.Extensions["code"] == nil || er.Extensions["code"] == "" {
				t.Fatalf("%s: error without code: %s", b, body)
			}
		}
		if resp.StatusCode == http.StatusOK && b != `{"query": "{ __typename }"}` {
			t.Fatalf("%s: accepted: %s", b, body)
		}
	}
	// A query string over 64 KiB.
	long := `{ __typename }` + strings.Repeat(" ", 64<<10)
	status, r, _ := gqlPost(t, e, e.AdminKey, long, nil)
	if status != http.StatusRequestEntityTooLarge || r.Errors[0].Extensions["code"] != "QUERY_TOO_LARGE" {
		t.Fatalf("long query: %d %+v", status, r)
	}
}

func TestGraphQLExplorerAndContractGraph(t *testing.T) {
	t.Parallel()
	e := enginetest.Start(t, "sqlite")
	resp, body := e.DoWith(t, http.MethodGet, "/graphql", nil, func(r *http.Request) { r.Header.Set("Accept", "text/html,application/xhtml+xml") })
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(body), "__schema") {
		t.Fatalf("explorer: %d %.200s", resp.StatusCode, body)
	}
	// GET with a query executes (authenticated).
	req, _ := http.NewRequest(http.MethodGet, e.URL+"/graphql?query="+strings.ReplaceAll(`{__typename}`, " ", "%20"), nil)
	req.Header.Set("Authorization", "Bearer "+e.AdminKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(b), `"__typename":"Query"`) {
		t.Fatalf("GET query: %d %s", res.StatusCode, b)
	}
	if resp, body := postYAML(t, e, e.AdminKey, "application/yaml", contractYAML(1)); resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload: %d %s", resp.StatusCode, body)
	}
	status, r, body2 := gqlPost(t, e, e.AdminKey, `{ contractGraph(name: "order_flow") { parties graph { entryPoints terminalSteps nodes { id owner type required next timeout businessContext } }
  transitions { from to maxRetries canRetry } validation { maxDuration allowMultipleTerminals } } }`, nil)
	if status != http.StatusOK || len(r.Errors) > 0 {
		t.Fatalf("contractGraph: %d %s", status, body2)
	}
	g := r.Data["contractGraph"].(map[string]any)
	nodes := g["graph"].(map[string]any)["nodes"].([]any)
	first := nodes[0].(map[string]any)
	if len(nodes) != 2 || first["id"] != "validate" || first["next"].([]any)[0] != "ship" || first["timeout"] != "30s" {
		t.Fatalf("graph: %s", body2)
	}
	if tr := g["transitions"].([]any)[0].(map[string]any); tr["maxRetries"] != float64(3) {
		t.Fatalf("transitions: %s", body2)
	}
}

// Every top-level query once, end to end, on each dialect.
func TestGraphQLEveryQuery(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		ctx := adminCtx(e)
		s, err := graphqltest.SeedThread(ctx, e.Server.Threads, "every", 2)
		if err != nil {
			t.Fatal(err)
		}
		if err := graphqltest.InsertValidation(ctx, e.Server.DB, s, time.Now()); err != nil {
			t.Fatal(err)
		}
		if resp, body := postYAML(t, e, e.AdminKey, "application/yaml", contractYAML(1)); resp.StatusCode != http.StatusCreated {
			t.Fatalf("upload: %d %s", resp.StatusCode, body)
		}
		c, err := e.Server.Threads.Application().Commands.StartThread.Handle(ctx, threads.StartThreadInput{Contract: "order_flow", Role: "checkout"})
		if err != nil {
			t.Fatal(err)
		}
		q := fmt.Sprintf(`{
  all: threads(limit: 10) { totalCount threads { id } }
  active: threads(status: "active", actor: %q, limit: 10) { totalCount }
  byContract: threadsByContract(contractName: "order_flow", contractVersion: 1) { totalCount threads { id contractName contractVersion } }
  byRef: threadsByRef(refKey: "orderId", refValue: "o-every") { totalCount threads { id } }
  threadChain(rootId: %q) { id }
  stepHistory(threadId: %q, stepName: "step-0") { attempt status error }
  validationResults(threadId: %q, stepName: %q, idempotencyKey: %q) { overallStatus criticalCount validations { type } }
  contractGraph(name: "order_flow", version: 1) { parties graph { entryPoints } }
  verifyThreadIntegrity(threadId: %q) { verified totalEvents }
  thread(id: %q) { notificationSummary { totalNotifications } notifications(options: {limit: 5}) { notificationType } hashChainStatus { verified } }
}`, e.Admin.ID, s.ID, s.ID, s.ID, s.StepName, s.StepKey, s.ID, s.ID)
		status, r, body := gqlPost(t, e, e.AdminKey, q, nil)
		if status != http.StatusOK || len(r.Errors) > 0 {
			t.Fatalf("%d %s", status, body)
		}
		d := r.Data
		num := func(path ...string) any {
			var v any = d
			for _, p := range path {
				v = v.(map[string]any)[p]
			}
			return v
		}
		if num("all", "totalCount") != float64(2) || num("active", "totalCount") != float64(1) {
			t.Fatalf("threads: %s", body)
		}
		bc := num("byContract", "threads").([]any)
		if len(bc) != 1 || bc[0].(map[string]any)["id"] != c.ID || bc[0].(map[string]any)["contractVersion"] != float64(1) {
			t.Fatalf("byContract: %s", body)
		}
		if num("byRef", "totalCount") != float64(1) || len(d["threadChain"].([]any)) != 1 || len(d["stepHistory"].([]any)) != 2 {
			t.Fatalf("byRef/chain/history: %s", body)
		}
		v := d["validationResults"].([]any)
		if len(v) != 1 || v[0].(map[string]any)["overallStatus"] != "violated" {
			t.Fatalf("validationResults: %s", body)
		}
		if num("verifyThreadIntegrity", "verified") != true || num("verifyThreadIntegrity", "totalEvents") != float64(3) {
			t.Fatalf("integrity: %s", body)
		}
		if num("contractGraph", "graph", "entryPoints").([]any)[0] != "validate" || num("thread", "hashChainStatus", "verified") != true {
			t.Fatalf("contract/thread: %s", body)
		}
	})
}
