package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// scrape reads /metrics (with token as bearer when set).
func scrape(t *testing.T, e *enginetest.Engine, token string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, body := e.DoWith(t, http.MethodGet, "/metrics", nil, func(r *http.Request) {
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
	})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// metricValue is the value of the series of family name whose labels include
// labels (counter, gauge, or a histogram's sample count); -1 when absent.
func metricValue(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	f, ok := fams[name]
	if !ok {
		return -1
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	return -1
}

func histogramSum(fams map[string]*dto.MetricFamily, name string) float64 {
	f, ok := fams[name]
	if !ok || len(f.GetMetric()) == 0 {
		return -1
	}
	return f.GetMetric()[0].GetHistogram().GetSampleSum()
}

// waitMetric polls /metrics until name{labels} equals want.
func waitMetric(t *testing.T, e *enginetest.Engine, name string, labels map[string]string, want float64) {
	t.Helper()
	got := 0.0
	pollUntilf(t, func() string { return fmt.Sprintf("%s%v = %v, want %v", name, labels, got, want) }, func() bool {
		got = metricValue(scrape(t, e, ""), name, labels)
		return got == want
	})
}

// metricsWorkload drives every instrumented path a known number of times and
// checks the engine metrics count exactly that.
func metricsWorkload(t *testing.T, e *enginetest.Engine) map[string]*dto.MetricFamily {
	putContract(t, e, enginetest.OrderFlowYAML)
	_, key := e.NewUser(t, domain.RoleMember)

	// One refused credential.
	if resp, _ := e.Do(t, http.MethodGet, "/v1/api-keys", key[:len(key)-2]+"zz", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("bad key: %d", resp.StatusCode)
	}

	c := connectWS(t, e, key)
	waitMetric(t, e, "threadengine_websocket_sessions_open", nil, 1)

	// A contract thread: one violated validation, then cancelled.
	ta := c.ok(map[string]any{"action": "startThread", "contractName": "order_flow", "refs": map[string]any{}, "role": "checkout"})["threadId"].(string)
	r := c.ok(step(ta, "validate", "success", "v1", nil))
	issues := r["validation"].(map[string]any)["issues"].([]any)
	severity := issues[0].(map[string]any)["severity"].(string)
	c.ok(map[string]any{"action": "threadEnd", "threadId": ta, "status": "cancelled"})

	// A free-form thread: x acknowledged at once; y acknowledged on its
	// second push; z never acknowledged (three pushes, then given up).
	tb := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
	c.ok(map[string]any{"action": "subscribe", "stepName": "x", "requestId": "sub-x"})
	c.ok(step(tb, "x", "success", "x1", nil))
	p := c.push(10 * time.Second)
	c.ok(map[string]any{"action": "ack_notification", "ackToken": p["ackToken"], "requestId": "ack"})

	e.Server.Threads.Hub().SetRedeliverAfter(time.Second)
	c.ok(map[string]any{"action": "subscribe", "stepName": "y", "requestId": "sub-y"})
	c.ok(step(tb, "y", "failed", "y1", nil))
	c.push(10 * time.Second)
	e.Clock.Advance(1100 * time.Millisecond) // leases end on the engine's clock
	p = c.push(10 * time.Second)
	c.ok(map[string]any{"action": "ack_notification", "ackToken": p["ackToken"], "requestId": "ack"})
	c.ok(map[string]any{"action": "subscribe", "stepName": "z", "requestId": "sub-z"})
	c.ok(step(tb, "z", "success", "z1", nil))
	for range 3 {
		c.push(10 * time.Second)
		e.Clock.Advance(1100 * time.Millisecond)
	}
	// Pushed max_deliveries times and its last lease over: the expiry pass
	// (every 30 s) settles it as dropped and counts it.
	e.Server.Threads.Hub().ExpireNow(context.Background())
	waitMetric(t, e, "threadengine_notifications_expired_total", nil, 1)
	c.ok(map[string]any{"action": "threadEnd", "threadId": tb, "status": "completed"})

	// OTLP: two spans accepted (a new thread), one rejected (its thread has ended).
	body, _ := proto.Marshal(traceReq(0xcd, "metrics"))
	if code, b := otlpPost(t, e, key, "application/x-protobuf", body, false); code != http.StatusOK {
		t.Fatalf("otlp: %d %s", code, b)
	}
	late := `{"resourceSpans":[{"resource":{"attributes":[{"key":"threadify.thread_id","value":{"stringValue":"` + tb + `"}}]},
 "scopeSpans":[{"spans":[{"traceId":"` + strings.Repeat("ef", 16) + `","spanId":"0404040404040404","name":"late"}]}]}]}`
	if code, b := otlpPost(t, e, key, "application/json", []byte(late), false); code != http.StatusOK || !strings.Contains(string(b), "rejectedSpans") {
		t.Fatalf("otlp late span: %d %s", code, b)
	}

	// GraphQL: two executed, one refused for cost, one as invalid (too deep).
	var costs float64
	for _, q := range []string{`{ threads { totalCount } }`, `{ stepHistory(threadId: "t", stepName: "s", limit: 998) { attempt } }`} {
		status, r, b := gqlPost(t, e, key, q, nil)
		if status != http.StatusOK {
			t.Fatalf("graphql: %d %s", status, b)
		}
		costs += r.Extensions["cost"].(float64)
	}
	if status, _, _ := gqlPost(t, e, key, `{ stepHistory(threadId: "t", stepName: "s", limit: 1000) { attempt } }`, nil); status != http.StatusUnprocessableEntity {
		t.Fatalf("graphql over cost: %d", status)
	}
	if status, _, b := gqlPost(t, e, key, strings.Repeat("{ a ", 14)+strings.Repeat("} ", 14), nil); status != http.StatusUnprocessableEntity {
		t.Fatalf("graphql too deep: %d %s", status, b)
	}

	c.conn.CloseNow()
	waitMetric(t, e, "threadengine_websocket_sessions_open", nil, 0)

	fams := scrape(t, e, "")
	want := []struct {
		name   string
		labels map[string]string
		value  float64
	}{
		{"threadengine_steps_recorded_total", map[string]string{"status": "success", "contract": "order_flow"}, 1},
		{"threadengine_steps_recorded_total", map[string]string{"status": "success", "contract": "none"}, 3}, // x, z, span checkout
		{"threadengine_steps_recorded_total", map[string]string{"status": "failed", "contract": "none"}, 2},  // y, span pay
		{"threadengine_validations_total", map[string]string{"status": "violated", "severity": severity}, 1},
		{"threadengine_threads_started_total", map[string]string{"contract": "order_flow"}, 1},
		{"threadengine_threads_started_total", map[string]string{"contract": "none"}, 2},
		{"threadengine_threads_ended_total", map[string]string{"status": "cancelled"}, 1},
		{"threadengine_threads_ended_total", map[string]string{"status": "completed"}, 1},
		{"threadengine_websocket_sessions_open", nil, 0},
		{"threadengine_notifications_pending", nil, 0},
		{"threadengine_notifications_delivered_total", nil, 2},
		{"threadengine_notifications_redelivered_total", nil, 3},
		{"threadengine_notifications_expired_total", nil, 1},
		{"threadengine_otlp_spans_total", map[string]string{"outcome": "accepted"}, 2},
		{"threadengine_otlp_spans_total", map[string]string{"outcome": "rejected"}, 1},
		{"threadengine_graphql_cost", nil, 2},
		{"threadengine_graphql_refused_total", map[string]string{"reason": "complexity"}, 1},
		{"threadengine_graphql_refused_total", map[string]string{"reason": "invalid"}, 1},
		{"threadengine_auth_failures_total", map[string]string{"method": "api_key", "code": string(domain.CodeUnauthenticated)}, 1},
	}
	for _, w := range want {
		if got := metricValue(fams, w.name, w.labels); got != w.value {
			t.Errorf("%s%v = %v, want %v", w.name, w.labels, got, w.value)
		}
	}
	// Six appends committed, however they were grouped.
	if got := histogramSum(fams, "threadengine_commit_batch_size"); got != 6 {
		t.Errorf("commit batch sizes sum to %v, want 6", got)
	}
	if got := metricValue(fams, "threadengine_commit_duration_seconds", nil); got < 1 || got > 6 {
		t.Errorf("commit transactions %v, want 1-6", got)
	}
	if got := histogramSum(fams, "threadengine_graphql_cost"); got != costs || costs < 999 {
		t.Errorf("graphql cost sum %v, want %v", got, costs)
	}
	if got := metricValue(fams, "go_sql_max_open_connections", map[string]string{"db_name": "threadengine"}); got < 1 {
		t.Errorf("database pool stats missing: %v", got)
	}
	return fams
}

func TestEngineMetrics(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		fams := metricsWorkload(t, e)
		checkDashboard(t, fams)
	})
}

// dashboardMetric finds metric names in PromQL expressions.
var dashboardMetric = regexp.MustCompile(`\b(threadengine_[a-z0-9_]+|go_sql_[a-z0-9_]+)\b`)

// checkDashboard: every metric the Grafana dashboard queries is served.
func checkDashboard(t *testing.T, fams map[string]*dto.MetricFamily) {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/grafana/threadengine.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			continue
		}
		for _, tg := range p.Targets {
			names := dashboardMetric.FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q queries no engine metric: %q", p.Title, tg.Expr)
			}
			for _, n := range names {
				used[n] = true
			}
		}
	}
	var missing []string
	for n := range used {
		fam := n
		if _, ok := fams[fam]; !ok {
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(n, suf); ok {
					if f, ok := fams[base]; ok && f.GetType() == dto.MetricType_HISTOGRAM {
						fam = base
					}
				}
			}
		}
		if _, ok := fams[fam]; !ok {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("the dashboard queries metrics the engine does not serve: %v", missing)
	}
	if len(used) < 15 {
		t.Errorf("the dashboard queries only %d metrics", len(used))
	}
}

func TestMetricsBearerToken(t *testing.T) {
	t.Parallel()
	e := enginetest.Start(t, sqldb.SQLite, enginetest.WithConfig(func(c *config.Config) { c.Metrics.Token = "scrape-secret" }))
	if resp, _ := e.Do(t, http.MethodGet, "/metrics", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d", resp.StatusCode)
	}
	if resp, _ := e.Do(t, http.MethodGet, "/metrics", "wrong", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", resp.StatusCode)
	}
	if fams := scrape(t, e, "scrape-secret"); metricValue(fams, "threadengine_otlp_spans_total", map[string]string{"outcome": "accepted"}) != 0 {
		t.Fatal("token scrape has no engine metrics")
	}
}
