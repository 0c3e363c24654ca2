package e2e

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/test/enginetest"
)

// BenchmarkMCPToolCall measures one tools/call round trip over loopback HTTP
// (authentication, JSON-RPC, the use case and its SQL) for get_thread on the
// fixture's order thread, and for a search_threads page.
func BenchmarkMCPToolCall(b *testing.B) {
	for _, d := range sqldbtest.Dialects(b) {
		b.Run(string(d), func(b *testing.B) {
			e := enginetest.Start(b, d)
			fx := setupMCPFixture(b, e)
			cs := mustConnect(b, e, fx.viewerKey)
			for _, c := range []struct {
				name string
				args map[string]any
			}{
				{"get_thread", map[string]any{"thread_id": fx.order}},
				{"search_threads", map[string]any{"limit": 50}},
			} {
				b.Run(c.name, func(b *testing.B) {
					for b.Loop() {
						res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.name, Arguments: c.args})
						if err != nil || res.IsError {
							b.Fatalf("%s: %v %v", c.name, err, res)
						}
					}
				})
			}
		})
	}
}
