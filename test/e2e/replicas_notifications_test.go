package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/domain"
)

// A subscriber on one replica receives steps written on the other; what is
// recorded while it is away waits in the log and reaches it when it
// subscribes again, on either replica; an unacknowledged push comes back
// with the same notification id.
func TestReplicasDeliverNotificationsAcrossReplicas(t *testing.T) {
	t.Parallel()
	a, b := twoReplicas(t)
	_, key := a.NewUser(t, domain.RoleMember)
	writer := connectWS(t, a, key)
	sub := connectWS(t, b, key)
	sub.ok(map[string]any{"action": "subscribe", "requestId": "s1", "stepName": "ship", "eventTypes": []string{"step.success"}})
	tid := writer.ok(map[string]any{"action": "startThread", "label": "x"})["threadId"].(string)
	writer.ok(step(tid, "ship", "success", "k1", nil))
	start := time.Now()
	n := sub.push(3 * time.Second)
	// A figure, not a requirement (test/load measures it): a busy machine
	// stretches it.
	t.Logf("cross-replica push after %v", time.Since(start).Round(time.Millisecond))
	first := n["notification"].(map[string]any)["notificationId"]
	sub.ok(map[string]any{"action": "ack_notification", "requestId": "a1", "ackToken": n["ackToken"]})

	// Away: two steps recorded, then the subscriber comes back on A.
	_ = sub.conn.CloseNow()
	writer.ok(step(tid, "ship", "success", "k2", nil))
	writer.ok(step(tid, "ship", "success", "k3", nil))
	back := connectWS(t, a, key)
	back.ok(map[string]any{"action": "subscribe", "requestId": "s1", "stepName": "ship", "eventTypes": []string{"step.success"}})
	var keys []string
	var unacked map[string]any
	for i := 0; i < 2; i++ {
		n := back.push(3 * time.Second)
		body := n["notification"].(map[string]any)
		if body["notificationId"] == first {
			t.Fatal("acknowledged notification delivered again")
		}
		keys = append(keys, body["idempotencyKey"].(string))
		unacked = body
	}
	if strings.Join(keys, ",") != "k2,k3" {
		t.Fatalf("missed notifications %v, want k2,k3 in order", keys)
	}
	// Not acknowledged: after the lease the same id comes back (here on B).
	_ = back.conn.CloseNow()
	again := connectWS(t, b, key)
	again.ok(map[string]any{"action": "subscribe", "requestId": "s1", "stepName": "ship", "eventTypes": []string{"step.success"}})
	seen := map[any]bool{}
	for i := 0; i < 2; i++ {
		seen[again.push(3 * time.Second)["notification"].(map[string]any)["notificationId"]] = true
	}
	if !seen[unacked["notificationId"]] {
		t.Fatalf("unacknowledged notification %v not redelivered: %v", unacked["notificationId"], seen)
	}
}
