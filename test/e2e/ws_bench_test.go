package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// BenchmarkWSRecordStep measures acknowledged steps through the whole stack
// (WebSocket, app, store) with 16 connections awaiting each step.
func BenchmarkWSRecordStep(b *testing.B) {
	forEachDialectB(b, func(b *testing.B, e *enginetest.Engine) {
		_, key := e.NewUser(b, domain.RoleMember)
		const conns = 16
		per := b.N/conns + 1
		b.ResetTimer()
		var wg sync.WaitGroup
		for c := 0; c < conns; c++ {
			wg.Add(1)
			go func(c int) {
				defer wg.Done()
				ctx := context.Background()
				conn, _, err := websocket.Dial(ctx, wsURL(e), nil)
				if err != nil {
					b.Error(err)
					return
				}
				defer conn.CloseNow()
				call := func(m map[string]any) map[string]any {
					buf, _ := json.Marshal(m)
					if err := conn.Write(ctx, websocket.MessageText, buf); err != nil {
						b.Error(err)
						return nil
					}
					_, data, err := conn.Read(ctx)
					if err != nil {
						b.Error(err)
						return nil
					}
					var r map[string]any
					_ = json.Unmarshal(data, &r)
					return r
				}
				call(map[string]any{"action": "connect", "apiKey": key})
				var tid string
				for i := 0; i < per; i++ {
					if i%50 == 0 {
						tid, _ = call(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
					}
					if r := call(step(tid, fmt.Sprint("s", i%8), "success", fmt.Sprint(c, "-", i), map[string]any{"i": "1"})); r["status"] != "success" {
						b.Errorf("step: %v", r)
						return
					}
				}
			}(c)
		}
		wg.Wait()
	})
}
