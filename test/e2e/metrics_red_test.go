package e2e

import (
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/mcpapi"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// documentedMetrics are the metric names of the tables in
// docs/operators/metrics.md.
func documentedMetrics(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../../docs/operators/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(threadengine_[a-z0-9_]+)`").FindAllStringSubmatch(string(raw), -1) {
		out = append(out, m[1])
	}
	if len(out) < 25 {
		t.Fatalf("only %d metrics documented", len(out))
	}
	return out
}

// lazySeries are the documented families with no series before their
// first event, because a label value is not known before it: the HTTP
// route and status, the error code of a refusal, the contract of a
// violation. What alerts watch (outcome="error", validations by status) is
// there from the start; docs/operators/metrics.md says which these are.
var lazySeries = map[string]bool{
	"threadengine_http_requests_total":            true,
	"threadengine_http_request_duration_seconds":  true,
	"threadengine_websocket_action_errors_total":  true,
	"threadengine_graphql_operation_errors_total": true,
	"threadengine_mcp_tool_call_errors_total":     true,
	"threadengine_violations_total":               true,
}

// Every documented metric is served from the first scrape, its fixed-label
// series at 0 (rate() and alerts work before the first event); after a
// scripted session every per-action counter moved exactly as the session
// did.
func TestMetricsPerActionFromStart(t *testing.T) {
	t.Parallel()
	forEachDialectD(t, func(t *testing.T, d sqldb.Dialect) {
		e := enginetest.Start(t, d, enginetest.WithConfig(func(c *config.Config) {
			alertsFast(c)
			c.Metrics.GaugeInterval = time.Second
		}))
		start := scrape(t, e, "")
		for _, name := range documentedMetrics(t) {
			if _, ok := start[name]; !ok && !lazySeries[name] {
				t.Errorf("documented metric %s is not served at start", name)
			}
		}
		zero := []struct {
			name   string
			labels map[string]string
		}{
			{"threadengine_validations_total", map[string]string{"status": "violated", "severity": "critical"}},
			{"threadengine_threads_ended_total", map[string]string{"status": "failed"}},
			{"threadengine_graphql_refused_total", map[string]string{"reason": "complexity"}},
			{"threadengine_auth_failures_total", map[string]string{"method": "session", "code": "session_expired"}},
			{"threadengine_websocket_actions_total", map[string]string{"action": "recordThreadEvent", "outcome": "error"}},
			{"threadengine_websocket_actions_total", map[string]string{"action": "unknown", "outcome": "error"}},
			{"threadengine_websocket_action_duration_seconds", map[string]string{"action": "waitFor"}},
			{"threadengine_graphql_operations_total", map[string]string{"operation": "GetThread", "outcome": "error"}},
			{"threadengine_graphql_operations_total", map[string]string{"operation": "anonymous", "outcome": "ok"}},
			{"threadengine_mcp_tool_calls_total", map[string]string{"tool": mcpapi.ToolGetThread, "outcome": "error"}},
			{"threadengine_notification_delivery_lag_seconds", nil},
			{"threadengine_webhook_delivery_lag_seconds", nil},
			{"threadengine_threads_active", map[string]string{"health": "VIOLATED"}},
		}
		for _, z := range zero {
			if got := metricValue(start, z.name, z.labels); got != 0 {
				t.Errorf("at start %s%v = %v, want 0", z.name, z.labels, got)
			}
		}

		putContract(t, e, enginetest.OrderFlowYAML)
		_, key := e.NewUser(t, domain.RoleMember)
		rcv := newReceiver(t)
		createWebhook(t, e, map[string]any{"name": "ops", "url": rcv.URL, "events": []string{"step.failed"}})

		c := connectWS(t, e, key)
		// A contract thread whose first step lacks its required context.
		ta := c.ok(map[string]any{"action": "startThread", "contractName": "order_flow", "refs": map[string]any{}, "role": "checkout"})["threadId"].(string)
		r := c.ok(step(ta, "validate", "success", "v1", nil))
		violations := map[[2]string]float64{}
		for _, is := range r["validation"].(map[string]any)["issues"].([]any) {
			is := is.(map[string]any)
			if is["severity"] != "info" {
				violations[[2]string{is["type"].(string), is["severity"].(string)}]++
			}
		}
		if len(violations) == 0 {
			t.Fatalf("no violation in %v", r)
		}
		// Refusals: a step on no thread, an action nobody knows.
		bad := c.call(step("no-such-thread", "x", "success", "n1", nil))
		unknown := c.call(map[string]any{"action": "bogus"})
		if bad["status"] != "error" || unknown["status"] != "error" || bad["code"] == "" || unknown["code"] == "" {
			t.Fatalf("refusals %v %v", bad, unknown)
		}
		// A free-form thread: one pushed notification, one failed step
		// (a webhook), then a second free-form thread left healthy.
		tb := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		c.ok(map[string]any{"action": "subscribe", "stepName": "x", "requestId": "sub-x"})
		c.ok(step(tb, "x", "success", "x1", nil))
		p := c.push(10 * time.Second)
		c.ok(map[string]any{"action": "ack_notification", "ackToken": p["ackToken"], "requestId": "ack"})
		c.ok(step(tb, "charge", "failed", "c1", nil))
		rcv.waitFor(t, 1)
		c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})

		// GraphQL: a named operation (name taken from the document), an
		// anonymous one, and a resolver error answered with HTTP 200.
		status, res, body := gqlPost(t, e, key, `query GetThread($id: ID!) { thread(id: $id) { id } }`, map[string]any{"id": tb})
		if status != http.StatusOK || len(res.Errors) > 0 {
			t.Fatalf("GetThread: %d %s", status, body)
		}
		if status, _, body := gqlPost(t, e, key, `{ threads { totalCount } }`, nil); status != http.StatusOK {
			t.Fatalf("anonymous: %d %s", status, body)
		}
		status, res, body = gqlPost(t, e, key, `query Verify { verifyThreadIntegrity(threadId: "no-such-thread") { verified } }`, nil)
		if status != http.StatusOK || len(res.Errors) != 1 {
			t.Fatalf("want a resolver error at 200: %d %s", status, body)
		}
		gqlCode := res.Errors[0].Extensions["code"].(string)

		// MCP: a call that succeeds and one the tool refuses.
		cs := mustConnect(t, e, key)
		if res := callTool(t, cs, mcpapi.ToolGetThread, map[string]any{"thread_id": tb}); res.IsError {
			t.Fatalf("get_thread: %s", resultText(res))
		}
		if res := callTool(t, cs, mcpapi.ToolGetThread, map[string]any{"thread_id": "no-such-thread"}); !res.IsError {
			t.Fatalf("get_thread of nothing: %s", resultText(res))
		}

		waitMetric(t, e, "threadengine_webhook_delivery_lag_seconds", nil, 1)
		waitMetric(t, e, "threadengine_threads_active", map[string]string{"health": "OK"}, 1)
		waitMetric(t, e, "threadengine_threads_active", map[string]string{"health": "FAILED"}, 1)
		waitMetric(t, e, "threadengine_threads_active", map[string]string{"health": "VIOLATED"}, 1)
		fams := scrape(t, e, "")
		want := []struct {
			name   string
			labels map[string]string
			value  float64
		}{
			{"threadengine_websocket_actions_total", map[string]string{"action": "connect", "outcome": "ok"}, 1},
			{"threadengine_websocket_actions_total", map[string]string{"action": "startThread", "outcome": "ok"}, 3},
			{"threadengine_websocket_actions_total", map[string]string{"action": "recordThreadEvent", "outcome": "ok"}, 3},
			{"threadengine_websocket_actions_total", map[string]string{"action": "recordThreadEvent", "outcome": "error"}, 1},
			{"threadengine_websocket_action_errors_total", map[string]string{"action": "recordThreadEvent", "code": bad["code"].(string)}, 1},
			{"threadengine_websocket_actions_total", map[string]string{"action": "unknown", "outcome": "error"}, 1},
			{"threadengine_websocket_action_errors_total", map[string]string{"action": "unknown", "code": unknown["code"].(string)}, 1},
			{"threadengine_websocket_actions_total", map[string]string{"action": "subscribe", "outcome": "ok"}, 1},
			{"threadengine_websocket_actions_total", map[string]string{"action": "ack_notification", "outcome": "ok"}, 1},
			{"threadengine_websocket_action_duration_seconds", map[string]string{"action": "recordThreadEvent"}, 4},
			{"threadengine_graphql_operations_total", map[string]string{"operation": "GetThread", "outcome": "ok"}, 1},
			{"threadengine_graphql_operations_total", map[string]string{"operation": "anonymous", "outcome": "ok"}, 1},
			{"threadengine_graphql_operations_total", map[string]string{"operation": "Verify", "outcome": "error"}, 1},
			{"threadengine_graphql_operation_errors_total", map[string]string{"operation": "Verify", "code": gqlCode}, 1},
			{"threadengine_mcp_tool_calls_total", map[string]string{"tool": mcpapi.ToolGetThread, "outcome": "ok"}, 1},
			{"threadengine_mcp_tool_calls_total", map[string]string{"tool": mcpapi.ToolGetThread, "outcome": "error"}, 1},
			{"threadengine_mcp_tool_call_errors_total", map[string]string{"tool": mcpapi.ToolGetThread, "code": "not_found"}, 1},
			{"threadengine_notification_delivery_lag_seconds", nil, 1},
			{"threadengine_webhook_delivery_lag_seconds", nil, 1},
			{"threadengine_threads_active", map[string]string{"health": "OK"}, 1},
			{"threadengine_threads_active", map[string]string{"health": "FAILED"}, 1},
			{"threadengine_threads_active", map[string]string{"health": "VIOLATED"}, 1}, // the contract thread
			{"threadengine_threads_active", map[string]string{"health": "WARNING"}, 0},
		}
		for k, n := range violations {
			want = append(want, struct {
				name   string
				labels map[string]string
				value  float64
			}{"threadengine_violations_total", map[string]string{"contract": "order_flow", "rule": k[0], "severity": k[1]}, n})
		}
		for _, w := range want {
			if got := metricValue(fams, w.name, w.labels); got != w.value {
				t.Errorf("%s%v = %v, want %v", w.name, w.labels, got, w.value)
			}
		}
		// Every error series of a protocol sums to its outcome="error" series.
		for _, one := range []string{"threadengine_websocket_action", "threadengine_graphql_operation", "threadengine_mcp_tool_call"} {
			if errs, outcome := sumFamily(fams[one+"_errors_total"]), sumWhere(fams[one+"s_total"], "outcome", "error"); errs != outcome {
				t.Errorf("%s: errors by code sum to %v, outcome=error to %v", one, errs, outcome)
			}
		}
	})
}

func sumFamily(f *dto.MetricFamily) float64 { return sumWhere(f, "", "") }

func sumWhere(f *dto.MetricFamily, label, value string) float64 {
	var n float64
	for _, m := range f.GetMetric() {
		match := label == ""
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label && lp.GetValue() == value {
				match = true
			}
		}
		if match {
			n += m.GetCounter().GetValue()
		}
	}
	return n
}

// The operation label takes the first names clients send and then counts
// the rest as other, so a client sending a new name per request cannot
// grow the series without bound.
func TestMetricsGraphQLOperationNamesBounded(t *testing.T) {
	t.Parallel()
	e := enginetest.Start(t, sqldb.SQLite)
	for i := range 60 {
		name := "Op" + strings.Repeat("x", i)
		if status, _, body := gqlPost(t, e, e.AdminKey, "query "+name+" { threads { totalCount } }", nil); status != http.StatusOK {
			t.Fatalf("%d %s", status, body)
		}
	}
	fams := scrape(t, e, "")
	names := map[string]bool{}
	for _, m := range fams["threadengine_graphql_operations_total"].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "operation" {
				names[lp.GetValue()] = true
			}
		}
	}
	// The SDKs' nine names, anonymous, other, and 50 of the 60 sent.
	if len(names) != 9+2+50 {
		t.Errorf("%d operation labels, want %d", len(names), 9+2+50)
	}
	if got := metricValue(fams, "threadengine_graphql_operations_total", map[string]string{"operation": "other", "outcome": "ok"}); got != 10 {
		t.Errorf("other = %v, want 10", got)
	}
}
