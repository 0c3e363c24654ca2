package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// TestWSProtocolScenario walks the protocol doc's §9 scenario by hand.
func TestWSProtocolScenario(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		owner, key := e.NewUser(t, domain.RoleMember)

		// A bad key: the reply is the first frame, then the socket closes.
		bad := dialWS(t, e)
		r := bad.call(map[string]any{"action": "connect", "apiKey": "td_nope", "serviceName": nil, "maxInFlight": 10})
		if r["status"] != "error" || r["message"] != "Invalid API key" {
			t.Fatalf("bad key reply %v", r)
		}
		select {
		case <-bad.closed:
		case <-time.After(answerBound):
			t.Fatal("socket not closed after a bad key")
		}

		c := dialWS(t, e)
		// Anything before connect is refused with its own action.
		c.fails(map[string]any{"action": "startThread", "refs": map[string]any{}}, "Not connected")
		r = c.ok(map[string]any{"action": "connect", "apiKey": key, "serviceName": "checkout-service", "maxInFlight": 10})
		if r["ownerId"] != owner.ID || r["message"] != "Connected successfully" {
			t.Fatalf("connect reply %v", r)
		}

		// Malformed JSON and unknown actions get error replies; the socket lives on.
		c.sendRaw([]byte(`{"action":`))
		if r := c.reply(); r["action"] != "error" || r["status"] != "error" || r["message"] != "Invalid JSON payload" {
			t.Fatalf("malformed JSON reply %v", r)
		}
		c.fails(map[string]any{"action": "teleport"}, "Unknown action: teleport")
		if r := c.ok(map[string]any{"action": "heartbeat", "requestId": "r-1"}); r["requestId"] != "r-1" {
			t.Fatalf("requestId not echoed: %v", r)
		}

		c.ok(map[string]any{"action": "subscribe", "requestId": "rq", "stepName": "ship", "eventTypes": []string{"step.success"}})
		c.fails(map[string]any{"action": "subscribe", "requestId": "rq", "stepName": "", "eventTypes": []string{"step.success"}}, "Step name is required")

		r = c.ok(map[string]any{"action": "startThread", "contractName": nil,
			"refs": map[string]any{"serviceName": "checkout-service", "label": "Order-1", "orderId": "O-1", "n": 5}, "tags": []string{"e2e"}})
		tid, _ := r["threadId"].(string)
		if !uuidRE.MatchString(tid) {
			t.Fatalf("threadId %q is not a UUID", tid)
		}

		v := step(tid, "validate", "success", "88f44761", map[string]any{"items": "3"})
		v["threadify_metadata"] = map[string]any{"message": "ok"}
		v["subSteps"] = []any{map[string]any{"name": "inner", "status": "success", "payload": map[string]any{"x": 1}, "recordedAt": "2026-11-21T22:10:44.211Z"}}
		r = c.ok(v)
		if r["stepName"] != "validate" || !uuidRE.MatchString(r["stepId"].(string)) || r["isDuplicate"] != nil {
			t.Fatalf("validate reply %v", r)
		}

		pay := step(tid, "pay", "failed", "06441296", map[string]any{"amount": "5"})
		pay["threadify_metadata"] = map[string]any{"error": "gateway timeout"}
		r = c.ok(pay)
		if r["retryCount"] != float64(0) {
			t.Fatalf("first pay attempt %v", r)
		}
		pay["status"], pay["threadify_metadata"] = "success", nil
		r = c.ok(pay)
		if r["retryCount"] != float64(1) || r["attempt"] != float64(2) || r["isDuplicate"] != nil {
			t.Fatalf("pay retry %v", r)
		}
		c.dup(pay, "Step already completed (duplicate)")

		r = c.ok(step(tid, "ship", "success", "ship-1", nil))
		shipID := r["stepId"]
		n := c.push(5 * time.Second)
		tok, _ := n["ackToken"].(string)
		body, _ := n["notification"].(map[string]any)
		if tok == "" || body["stepName"] != "ship" || body["threadId"] != tid || body["stepId"] != shipID ||
			// Subscribed with step.success: pushed in that vocabulary (Python SDK 0.4.0).
			body["notificationType"] != "step.success" || body["source"] != "step" ||
			body["stepStatus"] != "success" || body["ownerId"] != owner.ID || body["contractName"] != "" ||
			body["notificationId"] == "" || body["timestamp"] == "" {
			t.Fatalf("notification %v", n)
		}
		r = c.ok(map[string]any{"action": "ack_notification", "requestId": "rq", "notification_id": body["notificationId"], "thread_id": tid, "ackToken": tok, "processed": true})
		if r["acknowledged"] != true {
			t.Fatalf("ack %v", r)
		}

		c.ok(map[string]any{"action": "addRefs", "threadId": tid, "refs": map[string]any{"tracking": "TR1"}})

		// An oversize frame is answered (with its action and requestId, even
		// one sent last as the JS SDK does, never a nested one) and the socket
		// stays usable.
		big := `{"action":"recordThreadEvent","stepName":"big","context":{"requestId":"nested","x":"` +
			strings.Repeat("a", 1<<20) + `"},"requestId":"r-big"}`
		c.sendRaw([]byte(big))
		if r := c.reply(); r["action"] != "recordThreadEvent" || r["status"] != "error" || r["requestId"] != "r-big" ||
			!strings.Contains(r["message"].(string), "too large") {
			t.Fatalf("oversize reply %v", r)
		}
		r = c.ok(map[string]any{"action": "startThread", "contractName": nil, "refs": map[string]any{"label": "other"}})
		other := r["threadId"].(string)
		c.ok(step(other, "a", "success", "k1", nil))

		r = c.ok(map[string]any{"action": "threadEnd", "threadId": tid, "status": "completed", "reason": "done"})
		if r["threadStatus"] != "completed" || r["completedAt"] == "" {
			t.Fatalf("threadEnd %v", r)
		}
		// Ending it again the same way succeeds and changes nothing (counted
		// below: one thread.completed); the other way is refused.
		if again := c.ok(map[string]any{"action": "threadEnd", "threadId": tid, "status": "completed"}); again["completedAt"] != r["completedAt"] {
			t.Fatalf("repeated threadEnd %v, first %v", again, r)
		}
		if f := c.fails(map[string]any{"action": "threadEnd", "threadId": tid, "status": "cancelled"}, "already completed"); f["code"] != "thread_closed" {
			t.Fatalf("cancel after complete %v", f)
		}
		c.fails(step(tid, "late", "success", "late-1", nil), "thread is completed")
		// An ended thread's refs are part of its record: addRefs is refused too.
		wantCode(t, c.call(map[string]any{"action": "addRefs", "threadId": tid, "refs": map[string]any{"late": "1"}}), domain.CodeThreadClosed)
		c.fails(map[string]any{"action": "threadEnd", "threadId": tid, "status": "paused"}, "Failed to end thread")

		// What was committed is what was acknowledged.
		db := e.Server.DB
		var count int
		if err := db.Get(&count, db.Rebind(`SELECT COUNT(*) FROM thread_activities WHERE thread_id = ?`), tid); err != nil || count != 4 {
			t.Fatalf("activities = %d (%v), want 4 (validate, pay x2, ship)", count, err)
		}
		var retry int
		if err := db.Get(&retry, db.Rebind(`SELECT retry_count FROM thread_step_states WHERE thread_id = ? AND step_name = 'pay'`), tid); err != nil || retry != 1 {
			t.Fatalf("pay retry_count = %d (%v)", retry, err)
		}
		var label, status string
		if err := db.QueryRow(db.Rebind(`SELECT label, status FROM threads WHERE id = ?`), tid).Scan(&label, &status); err != nil || label != "Order-1" || status != "completed" {
			t.Fatalf("thread label %q status %q (%v)", label, status, err)
		}
		var refVal string
		if err := db.Get(&refVal, db.Rebind(`SELECT ref_value FROM thread_refs WHERE thread_id = ? AND ref_key = 'n'`), tid); err != nil || refVal != "5" {
			t.Fatalf("coerced ref n = %q (%v)", refVal, err)
		}
		if err := db.Get(&count, db.Rebind(`SELECT COUNT(*) FROM step_substeps WHERE thread_id = ?`), tid); err != nil || count != 1 {
			t.Fatalf("substeps = %d (%v)", count, err)
		}
		if err := db.Get(&count, db.Rebind(`SELECT COUNT(*) FROM thread_notifications WHERE thread_id = ?`), tid); err != nil || count != 5 {
			t.Fatalf("notifications = %d (%v), want 4 step events + thread.completed", count, err)
		}

		// The hash chain verifies, and a direct edit of a row is detected.
		ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: owner.ID, Role: domain.RoleMember})
		st, err := e.Server.Threads.Application().Queries.VerifyIntegrity.Handle(ctx, tid)
		if err != nil || !st.Verified || st.TotalEvents != 4 {
			t.Fatalf("verify %+v %v", st, err)
		}
		if _, err := db.Exec(db.Rebind(`UPDATE thread_activities SET context = ? WHERE thread_id = ? AND step_name = 'pay' AND attempt = 1`), `{"amount":"6"}`, tid); err != nil {
			t.Fatal(err)
		}
		st, err = e.Server.Threads.Application().Queries.VerifyIntegrity.Handle(ctx, tid)
		if err != nil || st.Verified || !strings.Contains(st.Error, "pay") || st.BrokenStepID == "" {
			t.Fatalf("tampered chain verified: %+v %v", st, err)
		}

		r = c.call(map[string]any{"action": "closeConnection"})
		if r["status"] != "success" {
			t.Fatalf("closeConnection %v", r)
		}
		select {
		case <-c.closed:
		case <-time.After(answerBound):
			t.Fatal("socket not closed after closeConnection")
		}
	})
}

func TestWSPermissionsAndParties(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, ownerKey := e.NewUser(t, domain.RoleMember)
		_, viewerKey := e.NewUser(t, domain.RoleViewer)
		_, otherKey := e.NewUser(t, domain.RoleMember)

		viewer := connectWS(t, e, viewerKey)
		viewer.ok(map[string]any{"action": "subscribe", "requestId": "rq", "stepName": "global", "eventTypes": []string{"thread.completed"}})
		viewer.fails(map[string]any{"action": "startThread", "refs": map[string]any{}}, "threads.write")

		o := connectWS(t, e, ownerKey)
		tid := o.ok(map[string]any{"action": "startThread", "refs": map[string]any{"label": "P"}})["threadId"].(string)
		// Node sends no threadId: the session's first thread is used.
		r := o.ok(map[string]any{"action": "inviteParty", "role": "supplier", "accessLevel": "observer", "expiresIn": "24h"})
		token, _ := r["threadToken"].(string)
		if strings.Count(token, ".") != 2 || r["threadId"] != tid || r["accessLevel"] != "observer" {
			t.Fatalf("invite %v", r)
		}
		// threads.invitation_max_ttl (default 30d, the Node SDK's own example).
		o.fails(map[string]any{"action": "inviteParty", "role": "supplier", "expiresIn": "31d"}, "at most 30d")
		month := o.ok(map[string]any{"action": "inviteParty", "role": "supplier", "accessLevel": "observer", "expiresIn": "30d"})
		if exp, err := time.Parse(time.RFC3339, fmt.Sprint(month["expiresAt"])); err != nil || exp.Sub(e.Clock.Now()) < 29*24*time.Hour {
			t.Fatalf("30-day invitation: %v", month)
		}
		_, monthKey := e.NewUser(t, domain.RoleMember)
		if r := connectWS(t, e, monthKey).ok(map[string]any{"action": "joinThread", "threadToken": month["threadToken"]}); r["threadId"] != tid {
			t.Fatalf("join with the 30-day invitation %v", r)
		}

		other := connectWS(t, e, otherKey)
		other.fails(map[string]any{"action": "joinThread", "threadToken": token[:len(token)-2] + "xx"}, "invalid thread token")
		r = other.ok(map[string]any{"action": "joinThread", "threadToken": token})
		if r["threadId"] != tid || r["role"] != "supplier" || r["accessLevel"] != "observer" {
			t.Fatalf("join %v", r)
		}
		other.fails(step(tid, "spy", "success", "s1", nil), "observer access")
		other.fails(map[string]any{"action": "addRefs", "threadId": tid, "refs": map[string]any{"x": "y"}}, "observer access")

		// Joining by id needs an invitation (only the owning key may add a
		// role without one); an invited participant can write.
		_, p2Key := e.NewUser(t, domain.RoleMember)
		p2 := connectWS(t, e, p2Key)
		if f := p2.fails(map[string]any{"action": "joinThread", "threadId": tid, "role": "logistics"}, "needs an invitation"); f["code"] != "not_a_party" {
			t.Fatalf("direct join without invitation %v", f)
		}
		inv := o.ok(map[string]any{"action": "inviteParty", "threadId": tid, "role": "logistics", "accessLevel": "participant"})
		r = p2.ok(map[string]any{"action": "joinThread", "threadToken": inv["threadToken"]})
		if r["accessLevel"] != "participant" || r["role"] != "logistics" {
			t.Fatalf("join by invitation %v", r)
		}
		p2.ok(step(tid, "pack", "success", "p1", nil))

		r = o.ok(map[string]any{"action": "threadEnd", "threadId": tid, "status": "cancelled", "reason": "x", "by": "me"})
		p2.fails(step(tid, "pack2", "success", "p2", nil), "cancelled")
		// A repeated cancel (a client retrying after a lost reply) succeeds
		// with the first cancel's time and publishes nothing new; complete is
		// refused.
		again := o.ok(map[string]any{"action": "threadEnd", "threadId": tid, "status": "cancelled", "reason": "retry"})
		if again["threadStatus"] != "cancelled" || again["cancelledAt"] == "" || again["cancelledAt"] != r["cancelledAt"] {
			t.Fatalf("repeated cancel %v, first %v", again, r)
		}
		if f := o.fails(map[string]any{"action": "threadEnd", "threadId": tid, "status": "completed"}, "already cancelled"); f["code"] != "thread_closed" {
			t.Fatalf("complete after cancel %v", f)
		}
		db := e.Server.DB
		var n int
		var reason string
		var errText *string
		if err := db.Get(&n, db.Rebind(`SELECT COUNT(*) FROM thread_notifications WHERE thread_id = ? AND notification_type = 'thread.cancelled'`), tid); err != nil || n != 1 {
			t.Fatalf("thread.cancelled notifications = %d (%v), want 1", n, err)
		}
		// The caller's object reason (spread into the frame by the Node SDK),
		// the first one kept; error stays for failures.
		if err := db.QueryRow(db.Rebind(`SELECT end_reason, error FROM threads WHERE id = ?`), tid).Scan(&reason, &errText); err != nil ||
			reason != `{"by":"me","reason":"x"}` || errText != nil {
			t.Fatalf("cancel reason %q, error %v (%v)", reason, errText, err)
		}
	})
}

func TestWSNotificationRedelivery(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		e.Server.Threads.Hub().SetRedeliverAfter(300 * time.Millisecond)
		_, key := e.NewUser(t, domain.RoleMember)
		c := connectWS(t, e, key)
		c.ok(map[string]any{"action": "subscribe", "requestId": "rq", "stepName": "ship", "eventTypes": []string{"execution.success"}})
		c.ok(map[string]any{"action": "subscribe", "requestId": "rq", "stepName": "global", "eventTypes": []string{"thread.*"}})
		tid := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		c.ok(step(tid, "pack", "success", "k0", nil)) // nobody subscribed to pack
		c.ok(step(tid, "ship", "success", "k1", nil))

		// Never acknowledged: delivered 3 times in all, with fresh tokens.
		var ids, toks []string
		for i := 0; i < 3; i++ {
			if i > 0 { // the lease ends on the engine's clock
				e.Clock.Advance(400 * time.Millisecond)
			}
			n := c.push(3 * time.Second)
			ids = append(ids, n["notification"].(map[string]any)["notificationId"].(string))
			toks = append(toks, n["ackToken"].(string))
		}
		if ids[0] != ids[1] || ids[1] != ids[2] || toks[0] == toks[1] {
			t.Fatalf("redeliveries ids %v tokens %v", ids, toks)
		}
		e.Clock.Advance(400 * time.Millisecond)
		c.noPush(1500 * time.Millisecond)

		// Acknowledged with the newer ack_token spelling: no redelivery.
		c.ok(step(tid, "ship", "success", "k2", nil))
		n := c.push(3 * time.Second)
		c.ok(map[string]any{"action": "ack_notification", "requestId": "rq", "ack_token": n["ackToken"]})
		e.Clock.Advance(400 * time.Millisecond)
		c.noPush(1500 * time.Millisecond)

		c.ok(map[string]any{"action": "threadEnd", "threadId": tid, "status": "completed"})
		n = c.push(3 * time.Second)
		body := n["notification"].(map[string]any)
		if body["notificationType"] != "thread.completed" || body["stepName"] != "global" || body["source"] != "thread" {
			t.Fatalf("thread notification %v", n)
		}
		c.ok(map[string]any{"action": "ack_notification", "requestId": "rq", "ackToken": n["ackToken"]})
	})
}

// At most maxInFlight pushes are unacknowledged per session; acks release the rest.
func TestWSMaxInFlight(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, key := e.NewUser(t, domain.RoleMember)
		c := dialWS(t, e)
		c.ok(map[string]any{"action": "connect", "apiKey": key, "maxInFlight": 2})
		c.ok(map[string]any{"action": "subscribe", "requestId": "rq", "stepName": "ship", "eventTypes": []string{"step.*"}})
		tid := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		for i := 0; i < 5; i++ {
			c.ok(step(tid, "ship", "success", fmt.Sprint("k", i), nil))
		}
		first := []map[string]any{c.push(3 * time.Second), c.push(3 * time.Second)}
		c.noPush(500 * time.Millisecond)
		seen := map[any]bool{}
		for _, n := range first {
			seen[n["notification"].(map[string]any)["idempotencyKey"]] = true
			c.ok(map[string]any{"action": "ack_notification", "requestId": "rq", "ackToken": n["ackToken"]})
		}
		for i := 0; i < 3; i++ {
			if i > 0 { // the lease ends on the engine's clock
				e.Clock.Advance(400 * time.Millisecond)
			}
			n := c.push(3 * time.Second)
			seen[n["notification"].(map[string]any)["idempotencyKey"]] = true
			c.ok(map[string]any{"action": "ack_notification", "requestId": "rq", "ackToken": n["ackToken"]})
		}
		if len(seen) != 5 {
			t.Fatalf("delivered %v, want all 5 steps", seen)
		}
		c.noPush(500 * time.Millisecond)
	})
}

// invocationId identifies one attempt: a frame re-sent after a lost reply
// (same invocationId) is a duplicate of that attempt even when it failed, so
// it is not counted as a retry; a new attempt (new invocationId) is.
func TestWSInvocationIDDedupe(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, key := e.NewUser(t, domain.RoleMember)
		c := connectWS(t, e, key)
		c.ok(map[string]any{"action": "subscribe", "requestId": "rq", "stepName": "pay", "eventTypes": []string{"*"}})
		tid := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		attempt := func(status, inv string) map[string]any {
			m := step(tid, "pay", status, "pay-1", map[string]any{"amount": "5"})
			m["invocationId"] = inv
			return m
		}
		attempts := func() []any {
			t.Helper()
			q := fmt.Sprintf(`{ stepHistory(threadId: %q, stepName: "pay", idempotencyKey: "pay-1") { attempt status } }`, tid)
			status, r, body := gqlPost(t, e, e.AdminKey, q, nil)
			if status != 200 || len(r.Errors) > 0 {
				t.Fatalf("stepHistory: %d %s", status, body)
			}
			return r.Data["stepHistory"].([]any)
		}

		first := c.ok(attempt("failed", "inv-X"))
		if first["retryCount"] != float64(0) || first["attempt"] != float64(1) || first["isDuplicate"] != nil {
			t.Fatalf("first attempt %v", first)
		}
		c.push(5 * time.Second)
		again := c.dup(attempt("failed", "inv-X"), "Step attempt already recorded (duplicate)")
		if again["stepId"] != first["stepId"] || again["retryCount"] != float64(0) || again["attempt"] != float64(1) {
			t.Fatalf("re-sent failed attempt %v, first %v", again, first)
		}
		c.noPush(500 * time.Millisecond)
		if h := attempts(); len(h) != 1 {
			t.Fatalf("history after a re-sent attempt: %v, want one attempt", h)
		}

		retry := c.ok(attempt("success", "inv-Y"))
		if retry["isDuplicate"] != nil || retry["retryCount"] != float64(1) || retry["attempt"] != float64(2) || retry["stepId"] == first["stepId"] {
			t.Fatalf("new attempt %v", retry)
		}
		c.push(5 * time.Second)
		dup := c.dup(attempt("success", "inv-Y"), "Step attempt already recorded (duplicate)")
		if dup["stepId"] != retry["stepId"] || dup["retryCount"] != float64(1) {
			t.Fatalf("re-sent success %v", dup)
		}
		// Without the same invocationId a succeeded step is still a duplicate.
		c.dup(attempt("success", ""), "Step already completed (duplicate)")
		c.noPush(500 * time.Millisecond)
		if h := attempts(); len(h) != 2 {
			t.Fatalf("history %v, want two attempts", h)
		}
		c.fails(attempt("failed", strings.Repeat("i", 129)), "invocationId must be at most 128 characters")

		// Without invocationId a re-sent failed attempt is a retry, as before.
		c.ok(step(tid, "ship", "failed", "ship-1", nil))
		if r := c.ok(step(tid, "ship", "failed", "ship-1", nil)); r["isDuplicate"] != nil || r["retryCount"] != float64(1) {
			t.Fatalf("failed twice without invocationId %v", r)
		}
	})
}

// The Go SDK expands "*" into step/rule names but subscribes everything else
// with execution/validation names and its tests read those on the wire: a
// session that sent any execution.* or validation.* name keeps that
// vocabulary even after a step.* subscription.
func TestWSGoVocabularyKept(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, key := e.NewUser(t, domain.RoleMember)
		c := connectWS(t, e, key)
		c.ok(map[string]any{"action": "subscribe", "requestId": "s1", "stepName": "ship", "eventTypes": []string{"execution.success"}})
		c.ok(map[string]any{"action": "subscribe", "requestId": "s2", "stepName": "global",
			"eventTypes": []string{"step.success", "step.failed", "rule.passed", "rule.violated"}})
		tid := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		c.ok(step(tid, "ship", "success", "ship-1", nil))
		body, _ := c.push(5 * time.Second)["notification"].(map[string]any)
		if body["source"] != "execution" || body["notificationType"] != "execution.success" {
			t.Fatalf("push to a Go-vocabulary session: %v", body)
		}
	})
}
