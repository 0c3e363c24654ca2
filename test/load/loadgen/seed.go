package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// Seed creates a thread with n successful steps over the SDK WebSocket
// protocol, as an SDK would.
func Seed(base, key string, steps int) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wsURL := "ws" + strings.TrimPrefix(base, "http") + "/threads"
	c, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		return "", err
	}
	defer c.CloseNow()
	call := func(msg map[string]any) (map[string]any, error) {
		b, _ := json.Marshal(msg)
		if err := c.Write(ctx, websocket.MessageText, b); err != nil {
			return nil, err
		}
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				return nil, err
			}
			var reply map[string]any
			if err := json.Unmarshal(data, &reply); err != nil {
				return nil, err
			}
			if reply["action"] != msg["action"] {
				continue // a notification push
			}
			if reply["status"] != "success" {
				return nil, fmt.Errorf("%s: %v", msg["action"], reply["message"])
			}
			return reply, nil
		}
	}
	if _, err := call(map[string]any{"action": "connect", "apiKey": key, "serviceName": "load-test"}); err != nil {
		return "", err
	}
	r, err := call(map[string]any{"action": "startThread", "contractName": nil,
		"refs": map[string]any{"serviceName": "load-test", "label": "load", "orderId": fmt.Sprintf("L-%d", time.Now().UnixNano())}})
	if err != nil {
		return "", err
	}
	id, _ := r["threadId"].(string)
	for i := 0; i < steps; i++ {
		now := time.Now().UTC().Format(time.RFC3339Nano)
		if _, err := call(map[string]any{"action": "recordThreadEvent", "threadId": id, "stepName": fmt.Sprintf("step-%02d", i),
			"startedAt": now, "finishedAt": now, "context": map[string]any{"i": fmt.Sprint(i)}, "status": "success",
			"serviceName": "load-test", "idempotencyKey": fmt.Sprintf("k%02d", i)}); err != nil {
			return "", err
		}
	}
	return id, nil
}
