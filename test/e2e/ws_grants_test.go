package e2e

import (
	"testing"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// grantScenario: two waiters (one per socket) ask for pay, which needs
// validate. One validate success enables one grant: exactly one waiter is
// allowed, the other keeps waiting and times out. The grant is given back;
// what it consumed is not restored; a report or a new wait carrying the
// given-back invocationId is refused with invocation_cancelled, while the
// step can still be recorded under a new invocation after a fresh success.
func grantScenario(t *testing.T, writer, w1, w2 *wsClient) {
	t.Helper()
	writer.send(map[string]any{"action": "thread", "requestId": "t", "threadKey": "grant-1", "serviceName": "svc",
		"contractName": "order_flow", "role": "checkout"})
	tid := writer.replyFor("t", 5*time.Second)["threadId"].(string)
	wait := func(c *wsClient, req, inv string, ms int) {
		c.send(map[string]any{"action": "waitFor", "requestId": req, "threadId": tid, "stepName": "pay",
			"invocationId": inv, "await": true, "timeoutMs": ms})
	}
	wait(w1, "a", "inv-a", 4000)
	wait(w2, "b", "inv-b", 4000)
	w1.noReplyFor("a", 200*time.Millisecond)
	writer.ok(step(tid, "validate", "success", "v1", map[string]any{"items": "3"}))

	// Exactly one is allowed; the other times out (before its deadline).
	var granted, other *wsClient
	var grantedInv, otherReq string
	select {
	case r := <-w1.replies:
		w1.mu.Lock()
		w1.held = append(w1.held, r)
		w1.mu.Unlock()
		granted, grantedInv, other, otherReq = w1, "inv-a", w2, "b"
	case r := <-w2.replies:
		w2.mu.Lock()
		w2.held = append(w2.held, r)
		w2.mu.Unlock()
		granted, grantedInv, other, otherReq = w2, "inv-b", w1, "a"
	case <-time.After(answerBound):
		t.Fatal("no waiter was granted after the predecessor succeeded")
	}
	grantedReq := "a"
	if grantedInv == "inv-b" {
		grantedReq = "b"
	}
	if r := granted.replyFor(grantedReq, time.Second); r["status"] != "success" || r["decision"] != "allowed" ||
		r["invocationId"] != grantedInv || r["stepName"] != "pay" || r["threadId"] != tid {
		t.Fatalf("granted: %v", r)
	}
	if r := other.replyFor(otherReq, 5*time.Second); r["decision"] != "timed_out" {
		t.Fatalf("the second waiter on the same predecessor success: %v, want timed_out", r)
	}

	// The same invocation asks again: allowed again, nothing more consumed.
	wait(granted, "again", grantedInv, 2000)
	if r := granted.replyFor("again", 3*time.Second); r["decision"] != "allowed" || r["invocationId"] != grantedInv {
		t.Fatalf("the granted invocation again: %v", r)
	}
	// Give it back: cancelled; the consumed success is not restored.
	granted.send(map[string]any{"action": "waitFor", "requestId": "c", "threadId": tid, "stepName": "pay",
		"invocationId": grantedInv, "cancel": true})
	if r := granted.replyFor("c", 3*time.Second); r["status"] != "success" || r["decision"] != "cancelled" || r["invocationId"] != grantedInv {
		t.Fatalf("cancel: %v", r)
	}
	wait(other, "b2", "inv-c", 1000)
	if r := other.replyFor("b2", 3*time.Second); r["decision"] != "timed_out" {
		t.Fatalf("after the cancel, a new waiter: %v, want timed_out (consumed stays consumed)", r)
	}
	// Its invocationId is refused: on a report (on the other socket too) and on a new wait.
	rep := step(tid, "pay", "success", grantedInv, nil)
	rep["invocationId"], rep["requestId"] = grantedInv, "rep"
	other.send(rep)
	if r := other.replyFor("rep", 3*time.Second); r["status"] != "error" || r["code"] != "invocation_cancelled" ||
		r["isDuplicate"] != nil {
		t.Fatalf("report under a cancelled grant: %v", r)
	}
	wait(granted, "again2", grantedInv, 2000)
	if r := granted.replyFor("again2", 3*time.Second); r["decision"] != "denied" || r["code"] != "invocation_cancelled" {
		t.Fatalf("waiting under a cancelled invocation: %v", r)
	}
	// Without a grant the step is judged as before.
	free := step(tid, "pay", "success", "p-free", nil)
	free["requestId"] = "free"
	writer.send(free)
	if r := writer.replyFor("free", 3*time.Second); r["status"] != "success" {
		t.Fatalf("report without an invocation: %v", r)
	}
}

func TestWSGrantConsumesPredecessor(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		putContract(t, e, enginetest.OrderFlowYAML)
		_, key := e.NewUser(t, domain.RoleMember)
		grantScenario(t, connectWS(t, e, key), connectWS(t, e, key), connectWS(t, e, key))
	})
}

// The same across two replicas: the waiters sit on different replicas, the
// writer on one of them; the thread's row lock decides which is granted.
func TestReplicasGrantConsumesPredecessor(t *testing.T) {
	t.Parallel()
	a, b := twoReplicas(t)
	putContract(t, a, enginetest.OrderFlowYAML)
	_, key := a.NewUser(t, domain.RoleMember)
	grantScenario(t, connectWS(t, a, key), connectWS(t, a, key), connectWS(t, b, key))
}
