package deploy_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/threadengine/engine/adapters/contractstore"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

var served struct {
	once  sync.Once
	names map[string]bool
}

// servedMetrics is every series name an engine serves at /metrics
// (histograms with their _bucket, _sum and _count series) after a short
// session, read from the engine itself so the list follows the code. The
// session makes the labelled families that have no series before their
// first event appear: HTTP requests, a refused key, a contract violation,
// a thread ended, a refused GraphQL operation.
func servedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	served.once.Do(func() {
		e := enginetest.Start(t, sqldb.SQLite)
		session(t, e)
		resp, body := e.Do(t, http.MethodGet, "/metrics", "", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/metrics: %d", resp.StatusCode)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		served.names = map[string]bool{}
		for name, f := range fams {
			served.names[name] = true
			switch f.GetType().String() {
			case "HISTOGRAM":
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					served.names[name+s] = true
				}
			case "SUMMARY":
				served.names[name+"_sum"], served.names[name+"_count"] = true, true
			}
		}
	})
	if served.names == nil {
		t.Fatal("the engine's metrics could not be read (see the first test that asked)")
	}
	return served.names
}

func session(t *testing.T, e *enginetest.Engine) {
	t.Helper()
	c, err := domain.ParseContract([]byte(enginetest.OrderFlowYAML))
	if err != nil {
		t.Fatal(err)
	}
	if err := contractstore.New(e.Server.DB).PutContractVersion(context.Background(), c, []byte(enginetest.OrderFlowYAML), "test", time.Now()); err != nil {
		t.Fatal(err)
	}
	if resp, _ := e.Do(t, http.MethodGet, "/v1/api-keys", "td_not-a-key", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a bad key: %d", resp.StatusCode)
	}
	deep := strings.Repeat("{ a ", 14) + strings.Repeat("} ", 14)
	if resp, body := e.Do(t, http.MethodPost, "/graphql", e.AdminKey, map[string]any{"query": deep}); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("a too deep query: %d %s", resp.StatusCode, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, strings.Replace(e.URL, "http://", "ws://", 1)+"/threads", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	call := func(m map[string]any) map[string]any {
		raw, _ := json.Marshal(m)
		if err := conn.Write(ctx, websocket.MessageText, raw); err != nil {
			t.Fatal(err)
		}
		for {
			_, data, err := conn.Read(ctx)
			if err != nil {
				t.Fatalf("%v: %v", m["action"], err)
			}
			var r map[string]any
			if err := json.Unmarshal(data, &r); err != nil {
				t.Fatal(err)
			}
			if r["action"] == m["action"] {
				if r["status"] != "success" {
					t.Fatalf("%v: %v", m["action"], r)
				}
				return r
			}
		}
	}
	call(map[string]any{"action": "connect", "apiKey": e.AdminKey, "serviceName": "deploy-test"})
	tid := call(map[string]any{"action": "startThread", "contractName": "order_flow", "refs": map[string]any{}, "role": "checkout"})["threadId"]
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	// validate without its required context "items": a violation.
	call(map[string]any{"action": "recordThreadEvent", "threadId": tid, "stepName": "validate", "status": "success",
		"startedAt": now, "finishedAt": now, "context": map[string]any{}, "idempotencyKey": "v1"})
	call(map[string]any{"action": "threadEnd", "threadId": tid, "status": "cancelled"})
	_ = conn.Close(websocket.StatusNormalClosure, "")
}

// fromPrometheus are series Prometheus itself adds to every target.
var fromPrometheus = map[string]bool{"up": true}

// The shipped alert rules load as Prometheus loads them (rulefmt and the
// PromQL parser; promtool check rules too when installed), fire in their
// promtool unit tests, cover what an operator pages on, and read only
// metrics the engine serves.
func TestAlertRules(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("promtool"); err == nil {
		for _, args := range [][]string{{"check", "rules", "prometheus/alerts.yaml"}, {"test", "rules", "prometheus/alerts_test.yaml"}} {
			if out, err := exec.Command("promtool", args...).CombinedOutput(); err != nil {
				t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
	} else {
		t.Log("promtool not installed (Debian package prometheus; .ci/run installs it): the rules' unit tests did not run, rulefmt and PromQL parsing below still did")
	}
	var rules []struct {
		Name    string   `json:"name"`
		Metrics []string `json:"metrics"`
	}
	if err := json.Unmarshal(runCheck(t, "rules", "prometheus/alerts.yaml"), &rules); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rules {
		names = append(names, r.Name)
	}
	for _, want := range []string{"ThreadengineDown", "ThreadengineNotReady", "ThreadengineHTTPErrorRatio",
		"ThreadengineNotificationsExpiring", "ThreadengineWebhookDeliveriesFailing", "ThreadengineDBPoolSaturated",
		"ThreadengineDeadlocks", "ThreadengineViolationsSpike", "ThreadengineWebSocketActionErrors", "ThreadengineGraphQLOperationErrors",
		"ThreadengineMCPToolErrors", "ThreadengineNotificationDeliveryLagHigh", "ThreadengineWebhookDeliveryLagHigh"} {
		if !slices.Contains(names, want) {
			t.Errorf("no alert %s in alerts.yaml", want)
		}
	}
	have := servedMetrics(t)
	for _, r := range rules {
		for _, m := range r.Metrics {
			if !have[m] && !fromPrometheus[m] {
				t.Errorf("alert %s reads %s, which the engine does not serve", r.Name, m)
			}
		}
	}
}

// Every query of the Grafana dashboard parses as PromQL, is filtered by
// the $instance selector, and reads metrics the engine serves; the
// dashboard repeats a row per replica and has a deadlock panel.
func TestGrafanaDashboard(t *testing.T) {
	t.Parallel()
	var targets []struct {
		Panel      string   `json:"panel"`
		Expr       string   `json:"expr"`
		Metrics    []string `json:"metrics"`
		Unfiltered []string `json:"unfiltered"`
	}
	if err := json.Unmarshal(runCheck(t, "dashboard", "grafana/threadengine.json"), &targets); err != nil {
		t.Fatal(err)
	}
	if len(targets) < 20 {
		t.Fatalf("only %d queries in the dashboard", len(targets))
	}
	have := servedMetrics(t)
	deadlocks := false
	for _, tg := range targets {
		if len(tg.Unfiltered) > 0 {
			t.Errorf("panel %q: %v not filtered by instance=~\"$instance\": %s", tg.Panel, tg.Unfiltered, tg.Expr)
		}
		for _, m := range tg.Metrics {
			if !have[m] {
				t.Errorf("panel %q reads %s, which the engine does not serve", tg.Panel, m)
			}
			deadlocks = deadlocks || m == "threadengine_db_deadlocks_total"
		}
	}
	if !deadlocks {
		t.Error("no panel shows threadengine_db_deadlocks_total")
	}
	raw, err := os.ReadFile("grafana/threadengine.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Multi      bool   `json:"multi"`
				IncludeAll bool   `json:"includeAll"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Type   string `json:"type"`
			Repeat string `json:"repeat"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	instance := false
	for _, v := range d.Templating.List {
		instance = instance || (v.Name == "instance" && v.Multi && v.IncludeAll)
	}
	if !instance {
		t.Error("no multi-value $instance variable with All")
	}
	repeated := false
	for _, p := range d.Panels {
		repeated = repeated || (p.Type == "row" && p.Repeat == "instance")
	}
	if !repeated {
		t.Error("no row repeated per instance")
	}
}
