package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// The thread model over the WebSocket, on both stores: one test per defect of
// issue 13 (parties, access levels, grants, statuses, cancel reasons).

func wantCode(t *testing.T, r map[string]any, code domain.Code) {
	t.Helper()
	if r["status"] != "error" || r["code"] != string(code) {
		t.Fatalf("want error %s, got %v", code, r)
	}
}

func startOrder(t *testing.T, c *wsClient) string {
	t.Helper()
	r := c.ok(map[string]any{"action": "startThread", "contractName": "order_flow:v1", "role": "checkout", "refs": map[string]any{}})
	if r["contractVersion"] != float64(1) {
		t.Fatalf("start with name:vN %v", r)
	}
	tid := r["threadId"].(string)
	c.ok(step(tid, "validate", "success", "v", map[string]any{"items": "1"}))
	c.ok(step(tid, "pay", "success", "p", nil))
	return tid
}

// Defect 1: one API key, two services. join(threadId, 'warehouse') acts as
// warehouse, so the warehouse's terminal step completes the thread.
func TestWSOneKeyTwoServices(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		putContract(t, e, enginetest.OrderFlowYAML)
		_, key := e.NewUser(t, domain.RoleMember)
		checkout := connectWS(t, e, key)
		tid := startOrder(t, checkout)
		warehouse := connectWS(t, e, key)
		r := warehouse.ok(map[string]any{"action": "joinThread", "threadId": tid, "role": "warehouse"})
		if r["role"] != "warehouse" || r["accessLevel"] != "participant" {
			t.Fatalf("join as warehouse: %v", r)
		}
		r = warehouse.ok(step(tid, "ship", "success", "s", nil))
		if r["threadStatus"] != "completed" || r["validation"].(map[string]any)["overallStatus"] != "passed" {
			t.Fatalf("ship by the warehouse connection: %v", r)
		}
		// Judged as warehouse, not skipped: the warehouse connection
		// recording a checkout-owned step is refused as warehouse.
		tid3 := startOrder(t, checkout)
		warehouse.ok(map[string]any{"action": "joinThread", "threadId": tid3, "role": "warehouse"})
		r = warehouse.ok(step(tid3, "pay", "success", "p2", nil))
		if v := r["validation"].(map[string]any); v["overallStatus"] != "violated" ||
			!strings.Contains(fmt.Sprint(v["issues"]), `"warehouse" recorded it`) {
			t.Fatalf("pay by the warehouse connection: %v", r)
		}
		// The checkout connection of the same key still acts as checkout.
		tid2 := startOrder(t, checkout)
		r = checkout.ok(step(tid2, "ship", "success", "s", nil))
		if r["threadStatus"] != "failed" || !strings.Contains(r["validation"].(map[string]any)["issues"].([]any)[0].(map[string]any)["message"].(string), `"checkout" recorded it`) {
			t.Fatalf("ship by the checkout connection: %v", r)
		}
	})
}

// Defect 1 with a second key for the warehouse, invited as participant.
func TestWSSecondKeyForWarehouse(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		putContract(t, e, enginetest.OrderFlowYAML)
		_, k1 := e.NewUser(t, domain.RoleMember)
		_, k2 := e.NewUser(t, domain.RoleMember)
		checkout := connectWS(t, e, k1)
		tid := startOrder(t, checkout)
		inv := checkout.ok(map[string]any{"action": "inviteParty", "role": "warehouse", "accessLevel": "participant"})
		warehouse := connectWS(t, e, k2)
		r := warehouse.ok(map[string]any{"action": "joinThread", "threadToken": inv["threadToken"], "role": "warehouse"})
		if r["role"] != "warehouse" || r["accessLevel"] != "participant" {
			t.Fatalf("join: %v", r)
		}
		// A participant may not end the thread: only its owner.
		wantCode(t, warehouse.call(map[string]any{"action": "threadEnd", "threadId": tid, "status": "cancelled"}), domain.CodeInsufficientAccess)
		if r = warehouse.ok(step(tid, "ship", "success", "s", nil)); r["threadStatus"] != "completed" {
			t.Fatalf("ship: %v", r)
		}
	})
}

// Defect 2 and 3: a key that never started nor joined — a member, or an
// admin — cannot write to a thread by id; joining by id needs an invitation.
func TestWSUnjoinedWriter(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		putContract(t, e, enginetest.OrderFlowYAML)
		_, k1 := e.NewUser(t, domain.RoleMember)
		_, k2 := e.NewUser(t, domain.RoleMember)
		owner := connectWS(t, e, k1)
		tid := startOrder(t, owner)
		for name, key := range map[string]string{"member": k2, "admin": e.AdminKey} {
			c := connectWS(t, e, key)
			wantCode(t, c.call(step(tid, "ship", "success", "x-"+name, nil)), domain.CodeNotAParty)
			wantCode(t, c.call(map[string]any{"action": "addRefs", "threadId": tid, "refs": map[string]any{"x": "y"}}), domain.CodeNotAParty)
			wantCode(t, c.call(map[string]any{"action": "threadEnd", "threadId": tid, "status": "cancelled"}), domain.CodeNotAParty)
			wantCode(t, c.call(map[string]any{"action": "inviteParty", "threadId": tid, "role": "warehouse"}), domain.CodeNotAParty)
			wantCode(t, c.call(map[string]any{"action": "joinThread", "threadId": tid, "role": "warehouse"}), domain.CodeNotAParty)
		}
		var n int
		if err := e.Server.DB.Get(&n, e.Server.DB.Rebind(`SELECT COUNT(*) FROM thread_activities WHERE thread_id = ?`), tid); err != nil || n != 2 {
			t.Fatalf("activities %d (%v), want the owner's 2", n, err)
		}
	})
}

// Defect 3: an observer invited by token who joins by id stays an observer.
func TestWSObserverJoinsByID(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, k1 := e.NewUser(t, domain.RoleMember)
		_, k2 := e.NewUser(t, domain.RoleMember)
		owner := connectWS(t, e, k1)
		tid := owner.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		inv := owner.ok(map[string]any{"action": "inviteParty", "role": "auditor", "accessLevel": "observer"})
		a := connectWS(t, e, k2)
		a.ok(map[string]any{"action": "joinThread", "threadToken": inv["threadToken"]})
		b := connectWS(t, e, k2)
		r := b.ok(map[string]any{"action": "joinThread", "threadId": tid})
		if r["accessLevel"] != "observer" || r["role"] != "auditor" {
			t.Fatalf("join by id after an observer invitation: %v", r)
		}
		wantCode(t, b.call(step(tid, "tamper", "success", "t", nil)), domain.CodeInsufficientAccess)
		wantCode(t, b.call(map[string]any{"action": "addRefs", "threadId": tid, "refs": map[string]any{"x": "y"}}), domain.CodeInsufficientAccess)
		wantCode(t, b.call(map[string]any{"action": "threadEnd", "threadId": tid}), domain.CodeInsufficientAccess)
		wantCode(t, b.call(map[string]any{"action": "joinThread", "threadId": tid, "role": "writer"}), domain.CodeNotAParty)
	})
}

// Defect 4: inviteParty without a thread on a connection holding several.
func TestWSAmbiguousInvite(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, k1 := e.NewUser(t, domain.RoleMember)
		c := connectWS(t, e, k1)
		c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})
		c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})
		r := c.call(map[string]any{"action": "inviteParty", "role": "supplier"})
		wantCode(t, r, domain.CodeAmbiguousThread)
		if !strings.Contains(r["message"].(string), "pass the thread") {
			t.Fatalf("message %v", r)
		}
	})
}

// A thread the connection saw end is no longer a default invite target: a
// Node SDK client (which never sends threadId) that completed one thread and
// started the next invites to the one it is on.
func TestWSInviteAfterAnEndedThread(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, k1 := e.NewUser(t, domain.RoleMember)
		c := connectWS(t, e, k1)
		first := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		c.ok(map[string]any{"action": "threadEnd", "threadId": first, "status": "completed"})
		second := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		if r := c.ok(map[string]any{"action": "inviteParty", "role": "supplier"}); r["threadId"] != second {
			t.Fatalf("invited to %v, want the open thread %s", r["threadId"], second)
		}
	})
}

// Defect 5: grants from inviteParty expire with the invitation.
func TestWSExpiredGrant(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, k1 := e.NewUser(t, domain.RoleMember)
		_, k2 := e.NewUser(t, domain.RoleMember)
		owner := connectWS(t, e, k1)
		tid := owner.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		inv := owner.ok(map[string]any{"action": "inviteParty", "role": "supplier", "accessLevel": "participant", "expiresIn": "1h"})
		late := owner.ok(map[string]any{"action": "inviteParty", "role": "carrier", "accessLevel": "participant", "expiresIn": "1h"})
		g := connectWS(t, e, k2)
		g.ok(map[string]any{"action": "joinThread", "threadToken": inv["threadToken"]})
		g.ok(step(tid, "deliver", "success", "d1", nil))
		e.Clock.Advance(61 * time.Minute)
		wantCode(t, g.call(step(tid, "deliver2", "success", "d2", nil)), domain.CodeGrantExpired)
		wantCode(t, g.call(map[string]any{"action": "addRefs", "threadId": tid, "refs": map[string]any{"x": "y"}}), domain.CodeGrantExpired)
		g2 := connectWS(t, e, k2)
		wantCode(t, g2.call(map[string]any{"action": "joinThread", "threadToken": late["threadToken"]}), domain.CodeGrantExpired)
		owner.ok(step(tid, "owner-step", "success", "o1", nil)) // the owner's party never expires
	})
}

// Defect 6: statuses, cancel reasons, sub-step order, JSON text.
func TestWSStatusesReasonsAndOrder(t *testing.T) {
	t.Parallel()
	texts := map[string]string{}
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, k1 := e.NewUser(t, domain.RoleMember)
		c := connectWS(t, e, k1)
		tid := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		for _, s := range []string{"success", "failed", "error", "skipped", "in_progress"} {
			c.ok(step(tid, "s-"+s, s, s, nil))
		}
		r := c.call(step(tid, "bogus", "bogus", "b", nil))
		wantCode(t, r, domain.CodeInvalidStepStatus)
		if !strings.Contains(r["message"].(string), "success, failed, error, skipped, in_progress") {
			t.Fatalf("message does not list the accepted values: %v", r)
		}
		sub := step(tid, "subs", "success", "subs", map[string]any{"b": "2", "aa": "<1>", "zzz": "3"})
		var subs []map[string]any
		for _, n := range []string{"five", "four", "three", "two", "one"} {
			subs = append(subs, map[string]any{"name": n, "status": "success", "payload": map[string]any{"long_key": 1, "k": "&"}})
		}
		sub["subSteps"] = subs
		sub["threadify_metadata"] = map[string]any{"zeta": 1, "a": map[string]any{"yy": true, "x": "<b>"}}
		c.ok(sub)
		wantCode(t, c.call(func() map[string]any {
			m := step(tid, "bad-sub", "success", "bs", nil)
			m["subSteps"] = []map[string]any{{"name": "x", "status": "maybe"}}
			return m
		}()), domain.CodeInvalidStepStatus)
		c.ok(map[string]any{"action": "threadEnd", "threadId": tid, "status": "cancelled", "reason": "customer left", "requestId": "r73"})

		_, res, body := gqlPost(t, e, k1, `query($id: ID!) { thread(id: $id) { status error endReason
			steps(stepName: "subs") { latestContext subSteps { name payload } history(limit: 1) { context metadata } }
		} }`, map[string]any{"id": tid})
		th, _ := res.Data["thread"].(map[string]any)
		// The reason is the reason (requestId is transport, not part of it),
		// and error stays for failures.
		if th == nil || th["status"] != "cancelled" || th["endReason"] != "customer left" || th["error"] != nil {
			t.Fatalf("cancelled thread: %s", body)
		}
		st := th["steps"].([]any)[0].(map[string]any)
		var order []string
		for _, ss := range st["subSteps"].([]any) {
			order = append(order, ss.(map[string]any)["name"].(string))
		}
		if strings.Join(order, ",") != "five,four,three,two,one" {
			t.Fatalf("sub-steps read back in order %v, want the order sent", order)
		}
		h := st["history"].([]any)[0].(map[string]any)
		texts[string(e.Server.DB.Dialect)] = fmt.Sprint(st["latestContext"], " ", h["context"], " ", h["metadata"], " ",
			st["subSteps"].([]any)[0].(map[string]any)["payload"])
		if h["context"] != `{"aa":"<1>","b":"2","zzz":"3"}` {
			t.Fatalf("context text %v", h["context"])
		}
	})
	if len(texts) == 2 && texts["sqlite"] != texts["postgres"] {
		t.Fatalf("context text differs between stores: %q", texts)
	}
}
