package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/contractstore"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

func putContract(t *testing.T, e *enginetest.Engine, src string) {
	t.Helper()
	c, err := domain.ParseContract([]byte(src))
	if err != nil {
		t.Fatalf("contract: %v %v", err, domain.ContractProblems(err))
	}
	if err := contractstore.New(e.Server.DB).PutContractVersion(context.Background(), c, []byte(src), "test", time.Now()); err != nil {
		t.Fatal(err)
	}
}

func TestWSContractThreads(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		putContract(t, e, enginetest.OrderFlowYAML)
		_, key := e.NewUser(t, domain.RoleMember)
		c := connectWS(t, e, key)
		c.ok(map[string]any{"action": "subscribe", "requestId": "rq", "stepName": "order_flow@validate", "eventTypes": []string{"rule.violated"}})

		c.fails(map[string]any{"action": "startThread", "contractName": "nope", "refs": map[string]any{}, "role": "checkout"}, "not found")
		c.fails(map[string]any{"action": "startThread", "contractName": "order_flow:1", "refs": map[string]any{}, "role": "pirate"}, "not a party")
		c.fails(map[string]any{"action": "startThread", "contractName": "order_flow", "refs": map[string]any{}}, "role is required")
		r := c.ok(map[string]any{"action": "startThread", "contractName": "order_flow:1", "refs": map[string]any{"label": "C1"}, "role": "checkout"})
		tid := r["threadId"].(string)
		if r["contractName"] != "order_flow" || r["contractVersion"] != float64(1) {
			t.Fatalf("start %v", r)
		}

		// Missing required context: a violation, but the step is recorded.
		r = c.ok(step(tid, "validate", "success", "v1", nil))
		val, _ := r["validation"].(map[string]any)
		if val["overallStatus"] != "violated" {
			t.Fatalf("validate reply %v", r)
		}
		n := c.push(5 * time.Second)
		body := n["notification"].(map[string]any)
		if body["notificationType"] != "rule.violated" || body["source"] != "rule" || // the vocabulary it subscribed with
			body["violationType"] != domain.IssueMissingRequiredField || body["contractName"] != "order_flow" || body["status"] != "violated" {
			t.Fatalf("violation push %v", n)
		}
		c.ok(map[string]any{"action": "ack_notification", "requestId": "rq", "ackToken": n["ackToken"]})

		c.ok(step(tid, "pay", "success", "p1", nil))
		// Manual completion is refused while no terminal step has succeeded.
		c.fails(map[string]any{"action": "threadEnd", "threadId": tid, "status": "completed"}, "terminal step")
		// ship is the warehouse's step: that party, invited, joins and records it.
		_, k2 := e.NewUser(t, domain.RoleMember)
		w := connectWS(t, e, k2)
		inv := c.ok(map[string]any{"action": "inviteParty", "threadId": tid, "role": "warehouse", "accessLevel": "participant"})
		w.ok(map[string]any{"action": "joinThread", "threadToken": inv["threadToken"]})
		r = w.ok(step(tid, "ship", "success", "s1", nil))
		if r["threadStatus"] != "completed" {
			t.Fatalf("terminal step did not complete the thread: %v", r)
		}
		r = c.ok(map[string]any{"action": "threadEnd", "threadId": tid, "status": "completed"})
		if r["threadStatus"] != "completed" {
			t.Fatalf("threadEnd after completion %v", r)
		}

		db := e.Server.DB
		var n1, n2, compact int
		// One result per attempt: a row when it has issues, else (a passed
		// one, migration 00102) on its attempt.
		if err := db.Get(&n1, db.Rebind(`SELECT COUNT(*) FROM thread_validations WHERE thread_id = ?`), tid); err != nil {
			t.Fatal(err)
		}
		if err := db.Get(&compact, db.Rebind(`SELECT COUNT(*) FROM thread_activities WHERE thread_id = ? AND validation_status IS NOT NULL`), tid); err != nil {
			t.Fatal(err)
		}
		if n1 != 1 || compact != 2 {
			t.Fatalf("validations: %d rows and %d on their attempts, want 1 (validate's issues) and 2", n1, compact)
		}
		var issues string
		if err := db.Get(&issues, db.Rebind(`SELECT CAST(issues AS TEXT) FROM thread_validations WHERE thread_id = ? AND step_name = 'validate'`), tid); err != nil || !strings.Contains(issues, "missing_required_field") {
			t.Fatalf("issues %q (%v)", issues, err)
		}
		if err := db.Get(&n2, db.Rebind(`SELECT COUNT(*) FROM thread_notifications WHERE thread_id = ? AND notification_type = 'thread.completed'`), tid); err != nil || n2 != 1 {
			t.Fatalf("thread.completed notifications = %d (%v)", n2, err)
		}

		// A step by the wrong party is a critical violation: a terminal one fails the thread.
		tid2 := c.ok(map[string]any{"action": "startThread", "contractName": "order_flow", "refs": map[string]any{}, "role": "checkout"})["threadId"].(string)
		c.fails(map[string]any{"action": "joinThread", "threadId": tid2, "role": "pirate"}, "not a party")
		if f := w.fails(map[string]any{"action": "joinThread", "threadId": tid2, "role": "warehouse"}, "needs an invitation"); f["code"] != "not_a_party" {
			t.Fatalf("join by id without invitation: %v", f)
		}
		c.fails(map[string]any{"action": "inviteParty", "threadId": tid2, "role": "pirate"}, "not a party")
		c.ok(step(tid2, "validate", "success", "v1", map[string]any{"items": "1"}))
		c.ok(step(tid2, "pay", "success", "p1", nil))
		r = c.ok(step(tid2, "ship", "success", "s1", nil))
		if r["threadStatus"] != "failed" {
			t.Fatalf("ship by checkout: %v", r)
		}
		c.fails(step(tid2, "ship", "success", "s2", nil), "thread is failed")
	})
}
