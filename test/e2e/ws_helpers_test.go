package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/test/enginetest"
)

// wsClient speaks the SDK protocol by hand: replies and pushes are split
// into two channels by a reader goroutine.
type wsClient struct {
	t       testing.TB
	conn    *websocket.Conn
	replies chan map[string]any
	pushes  chan map[string]any
	closed  chan struct{}
	readErr error // why the reader stopped; read after closed is closed

	mu   sync.Mutex
	held []map[string]any // replies read past while looking for another (replyFor)
}

// closeStatus is the close code the server sent (-1 if none); call it after
// c.closed is closed.
func (c *wsClient) closeStatus() websocket.StatusCode {
	<-c.closed
	return websocket.CloseStatus(c.readErr)
}

func wsURL(e *enginetest.Engine) string {
	return strings.Replace(e.URL, "http://", "ws://", 1) + "/threads"
}

func dialWS(t testing.TB, e *enginetest.Engine) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), answerBound)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, wsURL(e), nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	conn.SetReadLimit(8 << 20)
	c := &wsClient{t: t, conn: conn, replies: make(chan map[string]any, 256), pushes: make(chan map[string]any, 256), closed: make(chan struct{})}
	go func() {
		defer close(c.closed)
		for {
			_, data, err := conn.Read(context.Background())
			if err != nil {
				c.readErr = err
				return
			}
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				t.Errorf("server sent non-JSON frame: %q", data)
				return
			}
			if m["action"] == "notification" {
				c.pushes <- m
			} else {
				c.replies <- m
			}
		}
	}()
	t.Cleanup(func() { _ = conn.CloseNow() })
	return c
}

func (c *wsClient) sendRaw(data []byte) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), answerBound)
	defer cancel()
	if err := c.conn.Write(ctx, websocket.MessageText, data); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *wsClient) send(m map[string]any) {
	c.t.Helper()
	b, _ := json.Marshal(m)
	c.sendRaw(b)
}

func (c *wsClient) reply() map[string]any {
	c.t.Helper()
	select {
	case m := <-c.replies:
		return m
	case <-time.After(answerBound):
		c.t.Fatalf("no reply within %v", answerBound)
	}
	return nil
}

// call sends m and returns the next reply, which must echo m's action.
func (c *wsClient) call(m map[string]any) map[string]any {
	c.t.Helper()
	c.send(m)
	r := c.reply()
	if r["action"] != m["action"] {
		c.t.Fatalf("reply action %v, want %v: %v", r["action"], m["action"], r)
	}
	return r
}

func (c *wsClient) ok(m map[string]any) map[string]any {
	c.t.Helper()
	r := c.call(m)
	if r["status"] != "success" {
		c.t.Fatalf("%v: want success, got %v", m["action"], r)
	}
	return r
}

// dup sends a step report and checks the reply is the duplicate frame every
// SDK recognises: status "error", isDuplicate true, the given message, and
// the original attempt's stepId/idempotencyKey (exact keys, see
// docs/integrators/websocket-protocol.md).
func (c *wsClient) dup(m map[string]any, message string) map[string]any {
	c.t.Helper()
	r := c.call(m)
	want := []string{"action", "attempt", "idempotencyKey", "isDuplicate", "message", "retryCount", "status", "stepId", "stepName", "threadId", "threadStatus"}
	if _, ok := m["requestId"]; ok {
		want = append(want, "requestId")
	}
	var got []string
	for k := range r {
		got = append(got, k)
	}
	sort.Strings(got)
	sort.Strings(want)
	if r["status"] != "error" || r["isDuplicate"] != true || r["message"] != message || r["stepName"] != m["stepName"] ||
		r["threadId"] != m["threadId"] || r["idempotencyKey"] != m["idempotencyKey"] || !uuidRE.MatchString(fmt.Sprint(r["stepId"])) ||
		strings.Join(got, ",") != strings.Join(want, ",") {
		c.t.Fatalf("want the duplicate frame (%s) with keys %v, got %v", message, want, r)
	}
	return r
}

func (c *wsClient) fails(m map[string]any, contains string) map[string]any {
	c.t.Helper()
	r := c.call(m)
	if r["status"] != "error" || !strings.Contains(r["message"].(string), contains) {
		c.t.Fatalf("%v: want error containing %q, got %v", m["action"], contains, r)
	}
	return r
}

// answerBound is the least a test waits for a push or a reply it expects:
// a bound that only turns a hang into a failure, generous because a busy
// machine (CI shares its cores) may take seconds for what takes
// milliseconds alone. Waiting longer for what must come never fails a
// passing test; tests asserting that something does not come (noPush,
// noReplyFor) keep their short windows.
const answerBound = 30 * time.Second

// beforeRecheck bounds the wait for a socket closed by a broadcast
// (revocation, suspension): well inside the 30 s periodic re-check (the
// wsapi ping interval), the only other way it would close, so a close in
// time shows the broadcast did it without racing the machine's speed.
const beforeRecheck = 20 * time.Second

func (c *wsClient) push(within time.Duration) map[string]any {
	c.t.Helper()
	within = max(within, answerBound)
	select {
	case m := <-c.pushes:
		return m
	case <-time.After(within):
		c.t.Fatalf("no notification within %v", within)
	}
	return nil
}

func (c *wsClient) noPush(within time.Duration) {
	c.t.Helper()
	select {
	case m := <-c.pushes:
		c.t.Fatalf("unexpected notification %v", m)
	case <-time.After(within):
	}
}

func connectWS(t testing.TB, e *enginetest.Engine, key string) *wsClient {
	t.Helper()
	c := dialWS(t, e)
	c.ok(map[string]any{"action": "connect", "apiKey": key, "serviceName": "checkout-service", "maxInFlight": 10})
	return c
}

func step(threadID, name, status, key string, ctx map[string]any) map[string]any {
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	if ctx == nil {
		ctx = map[string]any{}
	}
	return map[string]any{"action": "recordThreadEvent", "threadId": threadID, "stepName": name, "status": status,
		"startedAt": now, "finishedAt": now, "context": ctx, "serviceName": "checkout-service", "idempotencyKey": key}
}

func forEachDialectB(b *testing.B, fn func(b *testing.B, e *enginetest.Engine)) {
	for _, d := range sqldbtest.Dialects(b) {
		b.Run(string(d), func(b *testing.B) { fn(b, enginetest.Start(b, d)) })
	}
}
