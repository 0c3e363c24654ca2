package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

func pushKey(n map[string]any) string {
	return fmt.Sprint(n["notification"].(map[string]any)["idempotencyKey"])
}

// Which pushes a new subscriber gets (docs/integrators/websocket-protocol.md,
// "Which pushes a subscriber gets"): not the old notifications of earlier
// threads nobody subscribed to; what was raised while a session of its
// principal held the key (a reconnect) and what was pushed and never
// acknowledged; and, after an explicit unsubscribe, none of those.
func TestWSHeldNotificationsGoToClaimants(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, key := e.NewUser(t, domain.RoleMember)
		writer := connectWS(t, e, key)
		tid := writer.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		writer.ok(step(tid, "ship", "success", "k0", nil)) // nobody subscribed
		e.Clock.Advance(time.Minute)

		first := connectWS(t, e, key)
		first.ok(map[string]any{"action": "subscribe", "requestId": "s", "stepName": "ship", "eventTypes": []string{"step.success"}})
		first.noPush(500 * time.Millisecond) // not k0
		writer.ok(step(tid, "ship", "success", "k1", nil))
		if k := pushKey(first.push(5 * time.Second)); k != "k1" {
			t.Fatalf("live push %s", k)
		}
		_ = first.conn.CloseNow() // gone without unsubscribing: the claim lasts
		writer.ok(step(tid, "ship", "success", "k2", nil))
		e.Clock.Advance(time.Minute)

		back := connectWS(t, e, key)
		back.ok(map[string]any{"action": "subscribe", "requestId": "s", "stepName": "ship", "eventTypes": []string{"step.success"}})
		got := map[string]bool{pushKey(back.push(5 * time.Second)): true, pushKey(back.push(5 * time.Second)): true}
		if !got["k1"] || !got["k2"] {
			t.Fatalf("the reconnected subscriber got %v, want k1 (unacknowledged) and k2 (raised while away)", got)
		}
		back.noPush(500 * time.Millisecond)
		back.ok(map[string]any{"action": "unsubscribe", "requestId": "u", "stepName": "ship"}) // its pushes are dropped, the claim ends
		writer.ok(step(tid, "ship", "success", "k3", nil))
		e.Clock.Advance(time.Minute)

		next := connectWS(t, e, key)
		next.ok(map[string]any{"action": "subscribe", "requestId": "s", "stepName": "ship", "eventTypes": []string{"step.success"}})
		next.noPush(time.Second)
		var dropped int
		if err := e.Server.DB.Get(&dropped, e.Server.DB.Rebind(`SELECT COUNT(*) FROM thread_notifications WHERE thread_id = ? AND delivery = 'dropped'`), tid); err != nil || dropped != 2 {
			t.Fatalf("dropped rows %d (%v), want k1 and k2", dropped, err)
		}
	})
}

// The claim is the principal's on every replica: a subscriber that leaves
// one replica gets what was raised meanwhile on the other when it
// subscribes there, and an explicit unsubscribe there ends it here.
func TestReplicasHeldNotifications(t *testing.T) {
	t.Parallel()
	a, b := twoReplicas(t)
	_, key := a.NewUser(t, domain.RoleMember)
	writer := connectWS(t, a, key)
	tid := writer.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
	sub := connectWS(t, b, key)
	sub.ok(map[string]any{"action": "subscribe", "requestId": "s", "stepName": "ship", "eventTypes": []string{"step.success"}})
	_ = sub.conn.CloseNow()
	writer.ok(step(tid, "ship", "success", "k1", nil))
	a.Clock.Advance(time.Minute)
	b.Clock.Advance(time.Minute)
	back := connectWS(t, a, key)
	back.ok(map[string]any{"action": "subscribe", "requestId": "s", "stepName": "ship", "eventTypes": []string{"step.success"}})
	n := back.push(5 * time.Second)
	if pushKey(n) != "k1" {
		t.Fatalf("push %v", n)
	}
	back.ok(map[string]any{"action": "ack_notification", "requestId": "a", "ackToken": n["ackToken"]})
	back.ok(map[string]any{"action": "unsubscribe", "requestId": "u", "stepName": "ship"})
	// The release reaches b: what is raised now is held for nobody there.
	deadline := time.Now().Add(answerBound)
	for {
		writer.ok(step(tid, "ship", "success", fmt.Sprint("late-", time.Now().UnixNano()), nil))
		a.Clock.Advance(time.Minute)
		b.Clock.Advance(time.Minute)
		late := connectWS(t, b, key)
		late.ok(map[string]any{"action": "subscribe", "requestId": "s", "stepName": "ship", "eventTypes": []string{"step.success"}})
		select {
		case m := <-late.pushes:
			if time.Now().After(deadline) {
				t.Fatalf("after the release, a new subscriber on the other replica still got %v", m)
			}
			late.ok(map[string]any{"action": "unsubscribe", "requestId": "u", "stepName": "ship"})
			continue // the release had not arrived yet
		case <-time.After(time.Second):
		}
		return
	}
}

// Auto-subscription (docs/integrators/websocket-protocol.md, "Threads a
// session follows"): a session that joined a thread gets a copy of each of
// its notifications without subscribing — outside maxInFlight, never
// redelivered, its ack settling nothing — while the session that wrote a
// step gets none, and a subscriber still gets the acknowledged push.
func TestWSFollowersGetCopies(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, ownerKey := e.NewUser(t, domain.RoleMember)
		_, guestKey := e.NewUser(t, domain.RoleMember)
		owner := connectWS(t, e, ownerKey)
		subscriber := connectWS(t, e, ownerKey)
		subscriber.ok(map[string]any{"action": "subscribe", "requestId": "s", "stepName": "pay", "eventTypes": []string{"*"}})
		tid := owner.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		token := owner.ok(map[string]any{"action": "inviteParty", "threadId": tid, "role": "supplier", "accessLevel": "observer"})["threadToken"]
		guest := dialWS(t, e)
		guest.ok(map[string]any{"action": "connect", "apiKey": guestKey, "maxInFlight": 1})
		guest.ok(map[string]any{"action": "joinThread", "threadToken": token})

		for i := range 3 {
			owner.ok(step(tid, "pay", "success", fmt.Sprint("p", i), nil))
		}
		var copies []map[string]any
		for range 3 { // maxInFlight 1 does not hold copies back
			copies = append(copies, guest.push(5*time.Second))
		}
		for i, c := range copies {
			if pushKey(c) != fmt.Sprint("p", i) || c["ackToken"] == nil {
				t.Fatalf("copy %d: %v", i, c)
			}
		}
		if r := guest.ok(map[string]any{"action": "ack_notification", "requestId": "a", "ackToken": copies[0]["ackToken"]}); r["acknowledged"] != false {
			t.Fatalf("a copy's ack: %v", r)
		}
		got := map[string]bool{}
		for range 3 {
			n := subscriber.push(5 * time.Second)
			got[pushKey(n)] = true
			if r := subscriber.ok(map[string]any{"action": "ack_notification", "requestId": "a", "ackToken": n["ackToken"]}); r["acknowledged"] != true {
				t.Fatalf("the subscriber's ack after the copy's: %v", r)
			}
		}
		if len(got) != 3 {
			t.Fatalf("the subscriber got %v", got)
		}
		e.Clock.Advance(time.Minute) // leases would end: copies are not redelivered
		guest.noPush(1500 * time.Millisecond)
		owner.noPush(100 * time.Millisecond) // the writer hears its steps in their replies
		subscriber.noPush(100 * time.Millisecond)
		owner.ok(map[string]any{"action": "threadEnd", "threadId": tid, "status": "completed"})
		end := guest.push(5 * time.Second)["notification"].(map[string]any)
		if end["notificationType"] != "thread.completed" || end["stepName"] != "global" {
			t.Fatalf("thread event copy %v", end)
		}
	})
}

// A session following a thread on one replica gets the copies of steps
// written on the other.
func TestReplicasFollowersGetCopies(t *testing.T) {
	t.Parallel()
	a, b := twoReplicas(t)
	_, key := a.NewUser(t, domain.RoleMember)
	_, guestKey := a.NewUser(t, domain.RoleMember)
	writer := connectWS(t, a, key)
	tid := writer.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
	token := writer.ok(map[string]any{"action": "inviteParty", "threadId": tid, "role": "watcher", "accessLevel": "observer"})["threadToken"]
	watcher := connectWS(t, b, guestKey)
	watcher.ok(map[string]any{"action": "joinThread", "threadToken": token})
	writer.ok(step(tid, "payment_confirmed", "success", "k1", nil))
	if n := watcher.push(5 * time.Second)["notification"].(map[string]any); n["stepName"] != "payment_confirmed" || n["threadId"] != tid {
		t.Fatalf("copy across replicas %v", n)
	}
}

// Pending waits are bounded per socket and per principal
// (limits.ws.max_waits_*), refused with limit_exceeded; a wait that answers
// frees its place.
func TestWSWaitLimits(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		e := enginetest.Start(t, d, enginetest.WithConfig(func(c *config.Config) {
			c.Limits.WS.MaxWaitsPerSocket, c.Limits.WS.MaxWaitsPerPrincipal = 2, 3
		}))
		putContract(t, e, enginetest.OrderFlowYAML)
		_, key := e.NewUser(t, domain.RoleMember)
		a, b := connectWS(t, e, key), connectWS(t, e, key)
		tid := a.ok(map[string]any{"action": "startThread", "contractName": "order_flow", "role": "checkout", "refs": map[string]any{}})["threadId"].(string)
		wait := func(c *wsClient, req string) {
			c.send(map[string]any{"action": "waitFor", "requestId": req, "threadId": tid, "stepName": "pay",
				"invocationId": "inv-" + req, "timeoutMs": 60000})
		}
		wait(a, "a1")
		wait(a, "a2")
		wait(a, "a3")
		if r := a.replyFor("a3", 5*time.Second); r["code"] != "limit_exceeded" || r["status"] != "error" {
			t.Fatalf("third wait on a socket: %v", r)
		}
		wait(b, "b1")
		wait(b, "b2")
		if r := b.replyFor("b2", 5*time.Second); r["code"] != "limit_exceeded" {
			t.Fatalf("fourth wait of the principal: %v", r)
		}
		a.send(map[string]any{"action": "cancelWait", "targetRequestId": "a1"})
		// The cancelled wait frees its place once it has answered: a new
		// one is refused until then, and then stays pending. Told apart by
		// the hub's count (a2, b1 and the new one), not by a reply's delay.
		hub := e.Server.Threads.Hub()
		pollUntil(t, "the cancelled wait gone", func() bool { return hub.WaitCounts().Pending == 2 })
		for i := 0; ; i++ {
			req := fmt.Sprint("b3-", i)
			wait(b, req)
			var refused map[string]any
			pollUntil(t, "a wait after a cancel accepted or refused", func() bool {
				if r, ok := b.replyWithin(req, 10*time.Millisecond); ok {
					refused = r
					return true
				}
				return hub.WaitCounts().Pending == 3
			})
			if refused == nil {
				break
			}
			if refused["code"] != "limit_exceeded" || i >= 1000 {
				t.Fatalf("a wait after a cancel: %v", refused)
			}
		}
	})
}

// replyWithin returns the reply to id if one arrives within d.
func (c *wsClient) replyWithin(id string, d time.Duration) (map[string]any, bool) {
	deadline := time.After(d)
	for {
		select {
		case r := <-c.replies:
			if r["requestId"] == id {
				return r, true
			}
			c.mu.Lock()
			c.held = append(c.held, r)
			c.mu.Unlock()
		case <-deadline:
			return nil, false
		}
	}
}
