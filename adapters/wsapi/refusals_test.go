package wsapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/httperr/httperrtest"
	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
)

// codedAuthn accepts "good", fails "down" as the database being
// unavailable, "boom" as a bug, and refuses every other key.
type codedAuthn struct{}

func (codedAuthn) AuthenticateAPIKey(_ context.Context, secret string) (domain.Principal, error) {
	switch secret {
	case "good":
		return domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleMember}, nil
	case "down":
		return domain.Principal{}, domain.E(domain.KindUnavailable, domain.CodeUnavailable, "the database is unavailable").
			WithCause(errors.New("dial tcp 127.0.0.1:1: connect: connection refused")).WithRetryAfter(2 * time.Second)
	case "boom":
		return domain.Principal{}, errors.New("pq: password=hunter2")
	}
	return domain.Principal{}, domain.E(domain.KindUnauthenticated, domain.CodeAPIKeyRevoked, "the API key was revoked")
}

func (codedAuthn) AuthenticateSession(context.Context, string) (domain.Principal, error) {
	return domain.Principal{}, domain.ErrUnauthenticated
}

type wsClient struct {
	t    *testing.T
	conn *websocket.Conn
}

func dialWS(t *testing.T, url string) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadLimit(1 << 20)
	t.Cleanup(func() { _ = conn.CloseNow() })
	return &wsClient{t: t, conn: conn}
}

// ask sends one raw frame and returns the next reply.
func (c *wsClient) ask(frame string) map[string]any {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.conn.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		c.t.Fatalf("write: %v", err)
	}
	_, data, err := c.conn.Read(ctx)
	if err != nil {
		c.t.Fatalf("read the reply to %.60s: %v", frame, err)
	}
	var r map[string]any
	if err := json.Unmarshal(data, &r); err != nil {
		c.t.Fatalf("reply %s: %v", data, err)
	}
	return r
}

// closed waits for the server's close frame and returns its status.
func (c *wsClient) closed() websocket.StatusCode {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err := c.conn.Read(ctx)
	return websocket.CloseStatus(err)
}

// Every refusal the protocol answers carries a registered code: the
// connection-level ones (malformed frames, not connected, already
// connected, a refused connect), frames over a limit, an unknown action and
// an action's own refusal.
func TestEveryRefusalCarriesACode(t *testing.T) {
	logs := httperrtest.NewLogs()
	lim := config.DefaultLimits().WS
	lim.MaxPerPrincipal, lim.MaxSubscriptions = 1, 1
	h := &Handler{Threads: threads.New(nil, nil, nil, []byte("k"), nil), Authn: codedAuthn{}, Log: logs.Logger(), Limits: lim}
	srv := httptest.NewServer(h)
	defer srv.Close()
	url := strings.Replace(srv.URL, "http", "ws", 1)

	type refusal struct {
		name, frame, action, code string
		check                     func(map[string]any) bool
	}
	c := dialWS(t, url)
	tooMany := map[string]any{"action": "heartbeat"}
	for i := range MaxFrameFields {
		tooMany[fmt.Sprint("f", i)] = i
	}
	tooManyFrame, _ := json.Marshal(tooMany)
	check := func(c *wsClient, cases []refusal) {
		t.Helper()
		for _, rc := range cases {
			r := c.ask(rc.frame)
			if r["status"] != "error" || r["action"] != rc.action || r["code"] != rc.code || r["message"] == "" ||
				len(domain.KindsOf(domain.Code(rc.code))) == 0 || (rc.check != nil && !rc.check(r)) {
				t.Errorf("%s: %v", rc.name, r)
			}
		}
	}
	check(c, []refusal{
		{"not JSON", `{"action":`, "error", "validation_failed", func(r map[string]any) bool { return r["message"] == "Invalid JSON payload" }},
		{"no action", `{"requestId":"r"}`, "error", "validation_failed", nil},
		{"too many fields", string(tooManyFrame), "error", "limit_exceeded", nil},
		{"not connected", `{"action":"startThread","requestId":"r1"}`, "startThread", "unauthenticated",
			func(r map[string]any) bool { return r["requestId"] == "r1" }},
		{"too large before connect", `{"action":"startThread","requestId":"r2","pad":"` + strings.Repeat("x", MaxPreConnectBytes) + `"}`,
			"startThread", "limit_exceeded", func(r map[string]any) bool { return r["requestId"] == "r2" }},
	})
	if r := c.ask(`{"action":"connect","apiKey":"good"}`); r["status"] != "success" {
		t.Fatalf("connect: %v", r)
	}
	check(c, []refusal{
		{"already connected", `{"action":"connect","apiKey":"good"}`, "connect", "validation_failed", nil},
		{"unknown action", `{"action":"teleport","requestId":"r3"}`, "teleport", "validation_failed",
			func(r map[string]any) bool {
				return r["message"] == "Unknown action: teleport" && r["field"] == "action"
			}},
		// Malformed frames are answered even when their action is one of
		// the fire-and-forget ones (only a well-formed heartbeat, ack,
		// subscribe or unsubscribe without requestId goes unanswered).
		{"unknown action without requestId", `{"action":"teleport"}`, "teleport", "validation_failed", nil},
		{"not an object", `[1,2]`, "error", "validation_failed", nil},
		{"a string", `"heartbeat"`, "error", "validation_failed", nil},
		{"action not a string", `{"action":3}`, "error", "validation_failed", nil},
		{"subscribe with an object step name", `{"action":"subscribe","stepName":{"a":1}}`, "subscribe", "validation_failed",
			func(r map[string]any) bool { return r["field"] == "stepName" }},
		{"subscribe with event types not a list", `{"action":"subscribe","stepName":"s","eventTypes":"step.success"}`, "subscribe", "validation_failed",
			func(r map[string]any) bool { return r["field"] == "eventTypes" }},
		{"ack with a list token", `{"action":"ack_notification","ackToken":["t"]}`, "ack_notification", "validation_failed", nil},
		{"cancelWait with an object target", `{"action":"cancelWait","targetRequestId":{}}`, "cancelWait", "validation_failed", nil},
		{"too large", `{"action":"startThread","pad":"` + strings.Repeat("x", MaxMessageBytes) + `"}`, "startThread", "limit_exceeded", nil},
		{"malformed frame field", `{"action":"subscribe","requestId":"r4"}`, "subscribe", "validation_failed", nil},
	})
	if r := c.ask(`{"action":"subscribe","stepName":"a","requestId":"r5"}`); r["status"] != "success" {
		t.Fatalf("subscribe: %v", r)
	}
	check(c, []refusal{{"subscriptions limit", `{"action":"subscribe","stepName":"b","requestId":"r6"}`, "subscribe", "limit_exceeded", nil}})

	// A second socket of the same principal is over its limit.
	second := dialWS(t, url)
	check(second, []refusal{{"per principal", `{"action":"connect","apiKey":"good"}`, "connect", "limit_exceeded", nil}})
	if st := second.closed(); st != websocket.StatusTryAgainLater {
		t.Errorf("per principal: closed %v", st)
	}

	// Refused connects: a bad key keeps the SDKs' text and says why in the
	// code; an unavailable database says when to retry; a bug is hidden
	// and logged once.
	bad := dialWS(t, url)
	check(bad, []refusal{{"revoked key", `{"action":"connect","apiKey":"old"}`, "connect", "api_key_revoked",
		func(r map[string]any) bool { return r["message"] == "Invalid API key" }}})
	if st := bad.closed(); st != websocket.StatusPolicyViolation {
		t.Errorf("revoked key: closed %v", st)
	}
	down := dialWS(t, url)
	check(down, []refusal{{"database down", `{"action":"connect","apiKey":"down"}`, "connect", "unavailable",
		func(r map[string]any) bool {
			return r["retryAfterMs"] == float64(2000) && r["message"] == "Authentication is temporarily unavailable"
		}}})
	if st := down.closed(); st != websocket.StatusTryAgainLater {
		t.Errorf("database down: closed %v", st)
	}
	boom := dialWS(t, url)
	check(boom, []refusal{{"internal", `{"action":"connect","apiKey":"boom"}`, "connect", "internal",
		func(r map[string]any) bool { return r["message"] == "Authentication is temporarily unavailable" }}})
	_ = boom.closed()
	if got := logs.Mentioning(slog.LevelError, "hunter2"); len(got) != 1 || got[0].Attrs["action"] != "connect" {
		t.Errorf("the internal error was logged %d times: %+v", len(got), logs.Records())
	}
}
