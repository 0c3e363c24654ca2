package e2e

import (
	"testing"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// Thread.linkedFrom answers the threads whose linkedThread:* refs point at
// a thread, oldest first, on both stores; a thread nobody links to has none.
func TestGraphQLLinkedFrom(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, viewerKey := e.NewUser(t, domain.RoleViewer)
		c := connectWS(t, e, e.AdminKey)
		start := func(label string, refs map[string]any) string {
			e.Clock.Advance(time.Second) // "oldest first" needs distinct start times
			return c.ok(map[string]any{"action": "startThread", "label": label, "refs": refs})["threadId"].(string)
		}
		refund := start("refund", map[string]any{})
		order := start("order", map[string]any{"linkedThread:refund": refund})
		audit := start("audit", map[string]any{})
		c.ok(map[string]any{"action": "addRefs", "threadId": audit, "refs": map[string]any{"linkedThread:subject": refund}})
		other := start("other", map[string]any{"orderId": refund}) // not a link

		_, r, raw := gqlPost(t, e, viewerKey, `query($a: ID!, $b: ID!) { a: thread(id: $a) { linkedFrom { id label } } b: thread(id: $b) { linkedFrom { id } } }`,
			map[string]any{"a": refund, "b": other})
		if len(r.Errors) > 0 {
			t.Fatalf("graphql %s", raw)
		}
		from := r.Data["a"].(map[string]any)["linkedFrom"].([]any)
		if len(from) != 2 || from[0].(map[string]any)["id"] != order || from[1].(map[string]any)["id"] != audit {
			t.Fatalf("linkedFrom of the refund %s; want order then audit", raw)
		}
		if l := r.Data["b"].(map[string]any)["linkedFrom"].([]any); len(l) != 0 {
			t.Fatalf("linkedFrom of an unlinked thread %s", raw)
		}
	})
}
