package e2e

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/test/enginetest"
)

// Real steps judged by a real contract reach exactly the webhooks whose
// minimum severity they reach, and the thread a critical violation fails
// reaches the webhooks subscribed to thread.failed.
func TestWebhooksEventsFromRealThreads(t *testing.T) {
	t.Parallel()
	forEachDialectD(t, func(t *testing.T, d sqldb.Dialect) {
		e := enginetest.Start(t, d, enginetest.WithConfig(alertsFast))
		resp, body := postYAML(t, e, e.AdminKey, "application/yaml", contractYAML(1))
		wantStatus(t, resp, body, http.StatusCreated)
		majorRcv, criticalRcv := newReceiver(t), newReceiver(t)
		major := createWebhook(t, e, map[string]any{"name": "major", "url": majorRcv.URL, "min_severity": "major",
			"events": []string{"validation.violated", "thread.failed"}})
		critical := createWebhook(t, e, map[string]any{"name": "critical", "url": criticalRcv.URL, "min_severity": "critical",
			"events": []string{"validation.violated"}})

		c := connectWS(t, e, e.AdminKey)
		start := func() string {
			return c.ok(map[string]any{"action": "startThread", "contractName": "order_flow", "role": "checkout", "refs": map[string]any{}})["threadId"].(string)
		}
		// Major: the entry step without its required context.
		missing := start()
		c.ok(step(missing, "validate", "success", "v1", map[string]any{"coupon": "X"}))
		// Critical: the warehouse's terminal step first, recorded by
		// checkout; it fails the thread.
		wrong := start()
		if r := c.ok(step(wrong, "ship", "success", "s1", nil)); r["threadStatus"] != "failed" {
			t.Fatalf("a critical violation left the thread %v", r["threadStatus"])
		}

		type seen struct{ event, severity, thread string }
		collect := func(r *receiver, secret string) []seen {
			var out []seen
			for _, g := range r.requests() {
				if g.Status != http.StatusOK {
					continue
				}
				p := verify(t, secret, g)
				out = append(out, seen{string(p.Type), p.Data.Severity, p.Data.ThreadID})
			}
			return out
		}
		has := func(l []seen, want seen) bool {
			for _, s := range l {
				if s == want {
					return true
				}
			}
			return false
		}
		wantMajor := []seen{{"validation.violated", "major", missing}, {"validation.violated", "critical", wrong}, {"thread.failed", "critical", wrong}}
		pollUntil(t, fmt.Sprintf("major webhook got at least %+v", wantMajor), func() bool {
			got := collect(majorRcv, major.Secret)
			all := true
			for _, w := range wantMajor {
				all = all && has(got, w)
			}
			return all
		})
		settledDeliveries(t, e, major.ID) // anything wrongly queued is sent by then
		settledDeliveries(t, e, critical.ID)
		for _, s := range collect(majorRcv, major.Secret) {
			if s.event == "validation.violated" && s.severity != "major" && s.severity != "critical" {
				t.Fatalf("major webhook got a %s violation", s.severity)
			}
		}
		got := collect(criticalRcv, critical.Secret)
		if !has(got, seen{"validation.violated", "critical", wrong}) {
			t.Fatalf("critical webhook got %+v; want the critical violation of %s", got, wrong)
		}
		for _, s := range got {
			if s.severity != "critical" || s.thread == missing || s.event != "validation.violated" {
				t.Fatalf("critical webhook got %+v", s)
			}
		}
	})
}
