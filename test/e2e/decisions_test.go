package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

var decisionContract = enginetest.DecideFlowFeature

// classifierServer is a real local chat-completions endpoint: goals are
// matched to "order", a note containing "thanks" is polite, and should
// advises yes. calls counts requests.
func classifierServer(t *testing.T, calls *atomic.Int64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		user := req.Messages[len(req.Messages)-1].Content
		answer := `{"label":"yes","probability":0.9}`
		switch {
		case strings.Contains(user, `perform the action \"charge\"`):
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
			return
		case strings.Contains(user, "Which contract action") && strings.Contains(user, "vague"):
			answer = `{"label":"order","probability":0.5}`
		case strings.Contains(user, "Which contract action"):
			answer = `{"label":"order","probability":0.95}`
		case strings.Contains(user, "polite") && !strings.Contains(user, "thanks"):
			answer = `{"label":"no","probability":0.9}`
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": answer}}}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

const canQuery = `query($t: ID!, $a: String, $g: String, $c: JSON) { can(threadId: $t, action: $a, goal: $g, context: $c) {
  threadId stepName allowed status matchedBy requiredSteps satisfiedSteps missingSteps previousStep reason violations { field rule message } } }`

func canOf(t *testing.T, e *enginetest.Engine, key, tid string, vars map[string]any) map[string]any {
	t.Helper()
	vars["t"] = tid
	status, r, body := gqlPost(t, e, key, canQuery, vars)
	if status != http.StatusOK || len(r.Errors) != 0 {
		t.Fatalf("can %v: %d %s", vars, status, body)
	}
	return r.Data["can"].(map[string]any)
}

func nextOf(t *testing.T, e *enginetest.Engine, tid string) []any {
	t.Helper()
	status, r, body := gqlPost(t, e, e.AdminKey, `query($t: ID!) { next(threadId: $t) { threadId paths { actions status reason } } }`, map[string]any{"t": tid})
	if status != http.StatusOK || len(r.Errors) != 0 {
		t.Fatalf("next: %d %s", status, body)
	}
	return r.Data["next"].(map[string]any)["paths"].([]any)
}

// can, should and next over GraphQL, before and after each step, with a
// classifier (a real local endpoint) on both stores: read-only answers with
// the reference's statuses and reasons; candidate contexts judged by
// content rules, references and semantic rules.
func TestDecisionsOverGraphQL(t *testing.T) {
	t.Parallel()
	forEachDialectD(t, func(t *testing.T, d sqldb.Dialect) {
		var calls atomic.Int64
		cl := classifierServer(t, &calls)
		e := enginetest.Start(t, d, enginetest.WithConfig(func(c *config.Config) {
			c.Contracts.Classifier = config.Classifier{URL: cl.URL + "/v1", Model: "test", Timeout: c.Contracts.Classifier.Timeout}
		}))
		resp, body := sendSource(t, e, http.MethodPost, "/v1/contracts", decisionContract)
		wantStatus(t, resp, body, http.StatusCreated)
		if strings.Contains(string(body), "no semantic classifier") {
			t.Fatalf("publish warns of a missing classifier although one is configured: %s", body)
		}
		c := connectWS(t, e, e.AdminKey)
		tid := c.ok(map[string]any{"action": "startThread", "contractName": "decide_flow", "refs": map[string]any{}, "role": "checkout"})["threadId"].(string)
		countSteps := func() int {
			var n int
			if err := e.Server.DB.Get(&n, e.Server.DB.Rebind(`SELECT COUNT(*) FROM thread_activities WHERE thread_id = ?`), tid); err != nil {
				t.Fatal(err)
			}
			return n
		}

		// Before any step.
		if p := nextOf(t, e, tid); len(p) != 1 || mustJSON(t, p[0]) != `{"actions":["order","review","charge"],"reason":"first action is eligible at this snapshot; later actions are conditional","status":"allowed"}` {
			t.Fatalf("next before: %s", mustJSON(t, p))
		}
		d0 := canOf(t, e, e.AdminKey, tid, map[string]any{"a": "charge"})
		if d0["allowed"] != false || d0["status"] != "denied" || d0["reason"] != "missing required prior steps: [order]" ||
			mustJSON(t, d0["missingSteps"]) != `["order"]` || d0["previousStep"] != nil || d0["threadId"] != tid || d0["matchedBy"] != "exact" {
			t.Fatalf("can charge first: %v", d0)
		}
		if d := canOf(t, e, e.AdminKey, tid, map[string]any{"a": "review"}); d["reason"] != domain.ReasonNotEntryPoint {
			t.Fatalf("can review first: %v", d)
		}
		if d := canOf(t, e, e.AdminKey, tid, map[string]any{"a": "order"}); d["allowed"] != true || d["reason"] != domain.ReasonAllowed {
			t.Fatalf("can order: %v", d)
		}
		if d := canOf(t, e, e.AdminKey, tid, map[string]any{"g": "place the customer's order"}); d["stepName"] != "order" || d["matchedBy"] != "classifier" || d["allowed"] != true {
			t.Fatalf("can by goal: %v", d)
		}
		if d := canOf(t, e, e.AdminKey, tid, map[string]any{"g": "something vague"}); d["status"] != "uncertain" || d["matchedBy"] != "none" ||
			d["reason"] != `goal matched "order" with probability 0.50, below 0.75` {
			t.Fatalf("can by a vague goal: %v", d)
		}
		if d := canOf(t, e, e.AdminKey, tid, map[string]any{"a": "order", "c": map[string]any{"order_id": " "}}); d["allowed"] != false ||
			!strings.Contains(d["reason"].(string), `content field "order_id" violates nonempty rule`) {
			t.Fatalf("can order with an empty id: %v", d)
		}
		// Errors: unknown action, both or neither of action and goal, a bad context.
		for _, vars := range []map[string]any{{"a": "bogus"}, {"a": "order", "g": "order"}, {}, {"a": "order", "c": []any{1}}, {"a": "order", "c": map[string]any{"x": map[string]any{}}}} {
			vars["t"] = tid
			_, r, body := gqlPost(t, e, e.AdminKey, canQuery, vars)
			if len(r.Errors) == 0 || r.Errors[0].Extensions["code"] != string(domain.CodeValidationFailed) {
				t.Fatalf("can %v: %s", vars, body)
			}
		}
		if n := countSteps(); n != 0 {
			t.Fatalf("decisions recorded %d steps", n)
		}

		c.ok(step(tid, "order", "success", "o1", map[string]any{"order_id": "O-1"}))
		if d := canOf(t, e, e.AdminKey, tid, map[string]any{"a": "charge"}); d["reason"] != `strict transition from "order" to "charge" is not allowed` || d["previousStep"] != "order" {
			t.Fatalf("can charge after order: %v", d)
		}
		// Semantic rules of a candidate context go to the classifier.
		if d := canOf(t, e, e.AdminKey, tid, map[string]any{"a": "review", "c": map[string]any{"note": "thanks a lot"}}); d["allowed"] != true {
			t.Fatalf("can review politely: %v", d)
		}
		d1 := canOf(t, e, e.AdminKey, tid, map[string]any{"a": "review", "c": map[string]any{"note": "pay now"}})
		if d1["allowed"] != false || d1["reason"] != `semantic field "note" did not satisfy its contract rule` || mustJSON(t, d1["violations"]) != `[{"field":"note","message":"semantic field \"note\" did not satisfy its contract rule","rule":"semantic"}]` {
			t.Fatalf("can review rudely: %v", d1)
		}
		if p := nextOf(t, e, tid); len(p) != 1 || mustJSON(t, p[0].(map[string]any)["actions"]) != `["review","charge"]` {
			t.Fatalf("next after order: %s", mustJSON(t, p))
		}
		status, r, body := gqlPost(t, e, e.AdminKey, `query($t: ID!) { should(threadId: $t, action: "review") { threadId stepName eligible recommendation reason } }`, map[string]any{"t": tid})
		if s, _ := r.Data["should"].(map[string]any); status != http.StatusOK || s["recommendation"] != "yes" || s["eligible"] != true || s["reason"] != "classifier selected yes with probability 0.90" {
			t.Fatalf("should review: %s", body)
		}
		_, r, body = gqlPost(t, e, e.AdminKey, `query($t: ID!) { should(threadId: $t, action: "charge") { eligible recommendation reason } }`, map[string]any{"t": tid})
		if s, _ := r.Data["should"].(map[string]any); s["recommendation"] != "no" || s["eligible"] != false {
			t.Fatalf("should charge: %s", body)
		}

		// Submitted, a semantic rule is judged before anything is recorded.
		rude := c.fails(step(tid, "review", "success", "r0", map[string]any{"note": "pay now"}), `semantic field "note" did not satisfy its contract rule`)
		if rude["code"] != string(domain.CodeContentRuleFailed) {
			t.Fatalf("rude review %v", rude)
		}
		if code, rows := refusals(t, e, e.AdminKey, "?thread_id="+tid); code != http.StatusOK || len(rows) != 1 || rows[0]["rule"] != "semantic" ||
			rows[0]["field"] != "note" || rows[0]["step_name"] != "review" {
			t.Fatalf("the semantic refusal is not in the refusal log: %d %v", code, rows)
		}
		c.fails(step(tid, "review", "success", "r-1", map[string]any{}), `semantic field "note" is missing or too long`)
		c.ok(step(tid, "review", "success", "r1", map[string]any{"note": "thanks"}))
		for _, bad := range []struct {
			ctx    map[string]any
			reason string
			n      int
		}{
			{map[string]any{"amount": 0, "currency": "JPY", "order_id": "O-1"}, `content field "amount" violates gt rule`, 2},
			{map[string]any{"amount": "5", "currency": "GBP", "order_id": "O-2"}, `content field "order_id" violates equals rule`, 1},
			{map[string]any{"amount": "5", "currency": "GBP"}, `required content field "order_id" is missing`, 1},
		} {
			d := canOf(t, e, e.AdminKey, tid, map[string]any{"a": "charge", "c": bad.ctx})
			if d["allowed"] != false || !strings.HasPrefix(d["reason"].(string), bad.reason) || len(d["violations"].([]any)) != bad.n {
				t.Fatalf("can charge %v: %v", bad.ctx, d)
			}
		}
		// A classifier failing to advise leaves the action eligible, "unavailable".
		_, r, body = gqlPost(t, e, e.AdminKey, `query($t: ID!) { should(threadId: $t, action: "charge") { eligible recommendation reason } }`, map[string]any{"t": tid})
		if s, _ := r.Data["should"].(map[string]any); s["recommendation"] != "unavailable" || s["eligible"] != true || s["reason"] != domain.ReasonClassifierFailed {
			t.Fatalf("should charge with a failing classifier: %s", body)
		}
		// The JSON scalar as a string holding the object works too.
		if d := canOf(t, e, e.AdminKey, tid, map[string]any{"a": "charge", "c": `{"amount": 12.50, "currency": "EUR", "order_id": "O-1"}`}); d["allowed"] != true ||
			mustJSON(t, d["satisfiedSteps"]) != `["order"]` {
			t.Fatalf("can charge with valid content: %v", d)
		}
		// A viewer may not ask; a free-form thread has nothing to decide.
		_, viewerKey := e.NewUser(t, domain.RoleViewer)
		if _, r, body := gqlPost(t, e, viewerKey, canQuery, map[string]any{"t": tid, "a": "charge"}); len(r.Errors) == 0 || r.Errors[0].Extensions["code"] != string(domain.CodeForbidden) {
			t.Fatalf("viewer can: %s", body)
		}
		free := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		if _, r, body := gqlPost(t, e, e.AdminKey, canQuery, map[string]any{"t": free, "a": "x"}); len(r.Errors) == 0 || !strings.Contains(r.Errors[0].Message, "thread has no contract") {
			t.Fatalf("free-form can: %s", body)
		}
		if n := countSteps(); n != 2 {
			t.Fatalf("decisions changed the record: %d steps", n)
		}

		c.ok(step(tid, "charge", "success", "c1", map[string]any{"amount": "5", "currency": "GBP", "order_id": "O-1"}))
		if d := canOf(t, e, e.AdminKey, tid, map[string]any{"a": "charge"}); d["allowed"] != false || d["reason"] != "thread is completed" {
			t.Fatalf("can after the end: %v", d)
		}
		if p := nextOf(t, e, tid); len(p) != 0 {
			t.Fatalf("next after the end: %s", mustJSON(t, p))
		}
		if calls.Load() == 0 {
			t.Fatal("the classifier was never asked")
		}
	})
}

// Without a classifier: goals must name an action, semantic rules deny
// (fail closed), should is unavailable, and preview says so.
func TestDecisionsWithoutClassifier(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		resp, body := postPreview(t, e, decisionContract)
		wantStatus(t, resp, body, http.StatusOK)
		if !strings.Contains(string(body), "no semantic classifier is configured (contracts.classifier.url)") {
			t.Fatalf("preview does not say the classifier is missing: %s", body)
		}
		resp, body = sendSource(t, e, http.MethodPost, "/v1/contracts", decisionContract)
		wantStatus(t, resp, body, http.StatusCreated)
		c := connectWS(t, e, e.AdminKey)
		tid := c.ok(map[string]any{"action": "startThread", "contractName": "decide_flow", "refs": map[string]any{}, "role": "checkout"})["threadId"].(string)
		if d := canOf(t, e, e.AdminKey, tid, map[string]any{"g": "order"}); d["stepName"] != "order" || d["matchedBy"] != "exact" {
			t.Fatalf("goal naming a step: %v", d)
		}
		if d := canOf(t, e, e.AdminKey, tid, map[string]any{"g": "place an order"}); d["status"] != "uncertain" || d["matchedBy"] != "none" ||
			!strings.Contains(d["reason"].(string), "classifier is not configured") {
			t.Fatalf("goal without classifier: %v", d)
		}
		c.ok(step(tid, "order", "success", "o1", map[string]any{"order_id": "O-1"}))
		if d := canOf(t, e, e.AdminKey, tid, map[string]any{"a": "review", "c": map[string]any{"note": "thanks"}}); d["allowed"] != false ||
			!strings.Contains(d["reason"].(string), "semantic classifier is unavailable") {
			t.Fatalf("semantic rule without classifier: %v", d)
		}
		_, r, body := gqlPost(t, e, e.AdminKey, `query($t: ID!) { should(threadId: $t, action: "review") { eligible recommendation reason } }`, map[string]any{"t": tid})
		if s, _ := r.Data["should"].(map[string]any); s["recommendation"] != "unavailable" || s["eligible"] != true || s["reason"] != domain.ReasonNoClassifier {
			t.Fatalf("should without classifier: %s", body)
		}
		// Without a classifier a step with a semantic rule is refused (fail closed), not recorded.
		refused := c.fails(step(tid, "review", "success", "r1", map[string]any{"note": "thanks"}), "semantic classifier is unavailable")
		if refused["code"] != string(domain.CodeClassifierUnavailable) {
			t.Fatalf("review without classifier %v", refused)
		}
		if code, rows := refusals(t, e, e.AdminKey, "?thread_id="+tid); code != http.StatusOK || len(rows) != 1 || rows[0]["code"] != string(domain.CodeClassifierUnavailable) {
			t.Fatalf("the unjudged refusal is not in the refusal log: %d %v", code, rows)
		}
		var n int
		if err := e.Server.DB.Get(&n, e.Server.DB.Rebind(`SELECT COUNT(*) FROM thread_activities WHERE thread_id = ? AND step_name = 'review'`), tid); err != nil || n != 0 {
			t.Fatalf("refused review recorded: %d %v", n, err)
		}

		// The same handlers as MCP tools.
		cs := mustConnect(t, e, e.AdminKey)
		var can struct {
			Allowed      bool     `json:"allowed"`
			Status       string   `json:"status"`
			Reason       string   `json:"reason"`
			MissingSteps []string `json:"missing_steps"`
			Violations   []struct {
				Field string `json:"field"`
			} `json:"violations"`
		}
		wantResult(t, "can", callTool(t, cs, "can", map[string]any{"thread_id": tid, "action": "review"}), &can)
		if !can.Allowed || can.Reason != domain.ReasonAllowed || can.MissingSteps == nil {
			t.Fatalf("mcp can review: %+v", can)
		}
		wantResult(t, "can", callTool(t, cs, "can", map[string]any{"thread_id": tid, "action": "charge",
			"context": map[string]any{"amount": -1, "currency": "GBP", "order_id": "O-1"}}), &can)
		if can.Allowed || can.Status != "denied" || !strings.Contains(can.Reason, "strict transition") {
			t.Fatalf("mcp can charge: %+v", can)
		}
		var should struct {
			Recommendation string `json:"recommendation"`
		}
		wantResult(t, "should", callTool(t, cs, "should", map[string]any{"thread_id": tid, "action": "review"}), &should)
		if should.Recommendation != "unavailable" {
			t.Fatalf("mcp should: %+v", should)
		}
		var next struct {
			Paths []struct {
				Actions []string `json:"actions"`
				Status  string   `json:"status"`
			} `json:"paths"`
		}
		wantResult(t, "next", callTool(t, cs, "next", map[string]any{"thread_id": tid}), &next)
		if len(next.Paths) != 1 || strings.Join(next.Paths[0].Actions, ",") != "review,charge" || next.Paths[0].Status != "allowed" {
			t.Fatalf("mcp next: %+v", next)
		}
		wantToolError(t, "can", callTool(t, cs, "can", map[string]any{"thread_id": tid, "action": "bogus"}), string(domain.CodeValidationFailed))
		_, viewerKey := e.NewUser(t, domain.RoleViewer)
		wantToolError(t, "next", callTool(t, mustConnect(t, e, viewerKey), "next", map[string]any{"thread_id": tid}), string(domain.CodeForbidden))
	})
}
