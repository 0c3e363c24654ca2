package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// heartbeat, ack_notification, subscribe and unsubscribe are answered only
// when the frame carries a requestId; without one they are still carried
// out, silently. Replies come in request order, so a reply to a frame without
// requestId would arrive before the reply to the tagged frame sent after it.
func TestWSFireAndForgetFramesAnsweredOnlyWithRequestID(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, key := e.NewUser(t, domain.RoleMember)
		c := dialWS(t, e)
		c.ok(map[string]any{"action": "connect", "apiKey": key, "maxInFlight": 1})

		// Each pair: untagged (no reply), then the same action tagged (reply,
		// the next frame on the socket). Errors are silent too when untagged.
		for i, m := range []map[string]any{
			{"action": "heartbeat"},
			{"action": "subscribe", "stepName": "tick", "eventTypes": []string{"step.success"}},
			{"action": "subscribe", "stepName": "", "eventTypes": []string{"step.success"}},
			{"action": "subscribe", "stepName": "tick", "eventTypes": []string{"bogus.event"}},
			{"action": "unsubscribe", "stepName": "nothing"},
			{"action": "unsubscribe", "stepName": ""},
			{"action": "ack_notification", "ackToken": "not-a-token", "processed": true},
			{"action": "ack_notification"},
		} {
			c.send(m)
			tagged := map[string]any{"requestId": fmt.Sprint("q", i)}
			for k, v := range m {
				tagged[k] = v
			}
			r := c.call(tagged)
			if r["requestId"] != tagged["requestId"] {
				t.Fatalf("%v: got %v first — the untagged frame was answered", tagged, r)
			}
		}

		// The untagged frames took effect: the subscription (sent untagged
		// above and again now) delivers, and an untagged ack releases the
		// next push (maxInFlight 1).
		c.send(map[string]any{"action": "subscribe", "stepName": "tick", "eventTypes": []string{"step.success"}})
		tid := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		c.ok(step(tid, "tick", "success", "k1", nil))
		c.ok(step(tid, "tick", "success", "k2", nil))
		first := c.push(5 * time.Second)
		c.noPush(300 * time.Millisecond)
		c.send(map[string]any{"action": "ack_notification", "ackToken": first["ackToken"], "processed": true})
		second := c.push(5 * time.Second)
		if first["notification"].(map[string]any)["idempotencyKey"] == second["notification"].(map[string]any)["idempotencyKey"] {
			t.Fatalf("the untagged ack did not release the next notification: %v then %v", first, second)
		}
		c.send(map[string]any{"action": "ack_notification", "ackToken": second["ackToken"]})
		c.send(map[string]any{"action": "unsubscribe", "stepName": "tick"})
		c.ok(step(tid, "tick", "success", "k3", nil))
		c.noPush(300 * time.Millisecond)

		// Other actions keep replying without requestId (Node 0.1.24 never sends one).
		if r := c.call(map[string]any{"action": "addRefs", "threadId": tid, "refs": map[string]any{"a": "1"}}); r["status"] != "success" {
			t.Fatalf("addRefs %v", r)
		}
		c.fails(map[string]any{"action": "teleport"}, "Unknown action")
		select {
		case r := <-c.replies:
			t.Fatalf("unexpected reply %v", r)
		case <-time.After(200 * time.Millisecond):
		}
		c.ok(map[string]any{"action": "closeConnection"})
	})
}
