package abuse

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// wsClient is a minimal SDK-like WebSocket client: one request at a time.
type wsClient struct {
	conn *websocket.Conn
}

func dialWS(ctx context.Context, baseURL string) (*wsClient, error) {
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(baseURL, "http")+"/threads", nil)
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(8 << 20)
	return &wsClient{conn: conn}, nil
}

// call sends one action and returns the reply for it (notifications are skipped).
func (c *wsClient) call(ctx context.Context, msg map[string]any) (map[string]any, error) {
	b, _ := json.Marshal(msg)
	if err := c.conn.Write(ctx, websocket.MessageText, b); err != nil {
		return nil, err
	}
	for {
		_, data, err := c.conn.Read(ctx)
		if err != nil {
			return nil, err
		}
		var r map[string]any
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, err
		}
		if r["action"] == "notification" {
			continue
		}
		return r, nil
	}
}

// ok is call that wants status success.
func (c *wsClient) ok(ctx context.Context, msg map[string]any) (map[string]any, error) {
	r, err := c.call(ctx, msg)
	if err != nil {
		return nil, err
	}
	if r["status"] != "success" {
		return r, fmt.Errorf("%v: %v", msg["action"], r)
	}
	return r, nil
}

func (c *wsClient) close() { _ = c.conn.Close(websocket.StatusNormalClosure, "") }

// normalClient is what a well-behaved SDK user does during an attack: over
// one WebSocket it starts a thread and records a step, and it reads threads
// over GraphQL. Each round must succeed within a few seconds.
type normalClient struct {
	e   *engine
	key string
	ws  *wsClient
	seq atomic.Int64
}

func newNormalClient(e *engine, key string) (*normalClient, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, err := dialWS(ctx, e.URL)
	if err != nil {
		return nil, err
	}
	if _, err := ws.ok(ctx, map[string]any{"action": "connect", "apiKey": key, "serviceName": "checkout-service", "maxInFlight": 10}); err != nil {
		ws.close()
		return nil, err
	}
	return &normalClient{e: e, key: key, ws: ws}, nil
}

func (n *normalClient) round() error {
	// A bound against a hang, not a speed requirement: on a loaded machine
	// a round under attack may take seconds (how long is not asserted).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	i := n.seq.Add(1)
	r, err := n.ws.ok(ctx, map[string]any{"action": "startThread", "refs": map[string]any{"orderId": fmt.Sprint("O-", i)}})
	if err != nil {
		return err
	}
	if _, err := n.ws.ok(ctx, map[string]any{"action": "recordThreadEvent", "threadId": r["threadId"], "stepName": "pay",
		"status": "success", "context": map[string]any{"amount": "5"}, "idempotencyKey": fmt.Sprint("k-", i)}); err != nil {
		return err
	}
	body := strings.NewReader(`{"query":"{ threads(limit: 5) { totalCount threads { id } } }"}`)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, n.e.URL+"/graphql", body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", n.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var out struct {
		Data   map[string]any `json:"data"`
		Errors []any          `json:"errors"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || len(out.Errors) > 0 {
		return fmt.Errorf("graphql: %d %v %v", resp.StatusCode, out.Errors, err)
	}
	return nil
}

func (n *normalClient) close() { n.ws.close() }
