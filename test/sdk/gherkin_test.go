package sdk_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

func postGherkin(t *testing.T, e *enginetest.Engine, src string) {
	t.Helper()
	resp, body := e.DoWith(t, http.MethodPost, "/v1/contracts", src, func(r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+e.AdminKey)
		r.Header.Set("Content-Type", "text/plain")
	})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload: %d %s", resp.StatusCode, body)
	}
}

// nodeSDK returns the Node SDK checkout and node, or skips the test.
func nodeSDK(t *testing.T) (dir, node string) {
	t.Helper()
	dir = os.Getenv(nodeSDKEnv)
	if dir == "" {
		t.Skipf("%s not set (point it at a checkout of ThreadifyDev/node-sdk with npm install done)", nodeSDKEnv)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found on PATH")
	}
	return dir, node
}

// gherkinEngines starts the engine the Gherkin SDK checks write to, with
// the payment, shipping and fresh-approval contracts uploaded, and a second
// replica on the same database on PostgreSQL (the same engine on SQLite).
func gherkinEngines(t *testing.T, d sqldb.Dialect, fixtures string) (e, b *enginetest.Engine) {
	t.Helper()
	noSecret := enginetest.WithConfig(func(c *config.Config) { c.Security.HashChainSecret = "" })
	e = enginetest.Start(t, d, noSecret)
	b = e
	if d == sqldb.Postgres {
		b = enginetest.Start(t, d, noSecret, enginetest.WithDatabase(e.Config.Database.URL), enginetest.WithoutOwner())
	}
	for _, f := range []string{"valid_payment_processing", "valid_shipping_confirmation"} {
		src, err := os.ReadFile(filepath.Join(fixtures, f+".feature"))
		if err != nil {
			t.Fatal(err)
		}
		postGherkin(t, e, string(src))
	}
	postGherkin(t, e, enginetest.FreshPayFeature)
	return e, b
}

// TestNodeSDKGherkin: the unmodified Node SDK against Gherkin contracts
// judged at run time — the payment example refuses amount 0 and currency
// "JPY" (the SDK's promise rejects with the engine's message naming the
// field and rule) and accepts valid content; a cross-step equality; two
// charges need two approvals, the two waiters on two replicas on
// PostgreSQL.
func TestNodeSDKGherkin(t *testing.T) {
	dir, node := nodeSDK(t)
	script := repoFile(t, "node/gherkin.mjs")
	fixtures := repoFile(t, "../../domain/gherkin/testdata/threadify-gherkin")
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		e, b := gherkinEngines(t, d, fixtures)
		_, key := e.NewUser(t, domain.RoleMember)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, script)
		cmd.Env = append(os.Environ(), nodeSDKEnv+"="+dir, "ENGINE_WS_URL="+wsURL(e), "ENGINE_WS_URL_B="+wsURL(b), "ENGINE_API_KEY="+key)
		out := runJSON(t, cmd)

		for name, rule := range map[string]string{"zero": `content field "amount" violates gt rule: must be a number greater than 0`,
			"jpy":         `content field "currency" violates one_of rule: must be one of "GBP", "USD", "EUR"`,
			"oldTracking": `content field "tracking_number" violates equals rule: must equal order_shipped.tracking_number`} {
			if msg, _ := dig(out, name, "message").(string); !strings.Contains(msg, rule) || dig(out, name, "isDuplicate") != false {
				t.Errorf("%s: SDK error %v, want one naming %s", name, out[name], rule)
			}
		}
		if out["charged"] != "success" || out["delivered"] != "success" {
			t.Errorf("valid charge %v, delivery %v", out["charged"], out["delivered"])
		}
		db := e.Server.DB
		status := func(id any) (string, int) {
			var s string
			var n int
			if err := db.QueryRow(db.Rebind(`SELECT status, step_count FROM threads WHERE id = ?`), id).Scan(&s, &n); err != nil {
				t.Fatal(err)
			}
			return s, n
		}
		if s, n := status(out["paymentThread"]); s != "completed" || n != 2 {
			t.Errorf("payment thread %s with %d steps, want completed with approval and one charge", s, n)
		}
		if s, n := status(out["shippingThread"]); s != "completed" || n != 3 {
			t.Errorf("shipping thread %s with %d steps", s, n)
		}
		if out["firstDecision"] != "allowed" || out["secondDecision"] != "allowed" || out["firstCharge"] != "success" ||
			out["secondCharge"] != "success" || out["secondSettledEarly"] != false {
			t.Errorf("fresh approvals: %v", out)
		}
		if s, n := status(out["freshThread"]); s != "active" || n != 4 {
			t.Errorf("fresh thread %s with %d steps, want active with 2 approvals and 2 charges", s, n)
		}
		var violated int
		if err := db.Get(&violated, db.Rebind(`SELECT COUNT(*) FROM thread_validations WHERE thread_id = ? AND overall_status <> 'passed'`),
			out["freshThread"]); err != nil || violated != 0 {
			t.Errorf("fresh thread validations not passed: %d (%v)", violated, err)
		}
		var grants int
		if err := db.Get(&grants, db.Rebind(`SELECT COUNT(*) FROM step_grants WHERE thread_id = ? AND fresh_consumed <> ''`),
			out["freshThread"]); err != nil || grants != 2 {
			t.Errorf("grants that consumed an approval: %d (%v), want 2", grants, err)
		}
	})
}
