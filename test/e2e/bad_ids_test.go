package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// TestIDsWithNULAndControlBytes is issue 14 point 8: an id with a NUL byte,
// invalid UTF-8 or a control character is a coded 404 (or, where the API
// answers "none" for unknown ids, that answer) on both stores, over every
// transport — never a 500 from PostgreSQL refusing the text.
func TestIDsWithNULAndControlBytes(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, key := e.NewUser(t, domain.RoleMember)
		bad := []string{"a\x00b", "\x01", "id\x7f"}
		for _, id := range bad {
			// REST: the id in the path (escaped as a browser would).
			path := strings.NewReplacer("\x00", "%00", "\x01", "%01", "\x7f", "%7F").Replace(id)
			resp, body := e.Do(t, http.MethodPatch, "/v1/users/"+path, e.AdminKey, map[string]any{"full_name": "x"})
			wantProblem(t, resp, body, http.StatusNotFound, "not_found")
			resp, body = e.Do(t, http.MethodDelete, "/v1/api-keys/"+path, e.AdminKey, nil)
			wantProblem(t, resp, body, http.StatusNotFound, "not_found")

			// GraphQL: thread(id) is null; verifyThreadIntegrity is not found.
			st, r, raw := gqlPost(t, e, key, `query($id: ID!) { thread(id: $id) { id } }`, map[string]any{"id": id})
			if st != http.StatusOK || len(r.Errors) != 0 || r.Data["thread"] != nil {
				t.Errorf("thread(%q): %d %s", id, st, raw)
			}
			st, r, raw = gqlPost(t, e, key, `query($id: String!) { verifyThreadIntegrity(threadId: $id) { verified } }`, map[string]any{"id": id})
			if st != http.StatusOK || len(r.Errors) != 1 || r.Errors[0].Extensions["code"] != "not_found" {
				t.Errorf("verifyThreadIntegrity(%q): %d %s", id, st, raw)
			}

			// MCP tools.
			cs := mustConnect(t, e, key)
			wantToolError(t, "get_thread", callTool(t, cs, "get_thread", map[string]any{"thread_id": id}), "not_found")
			wantToolError(t, "verify_thread_integrity", callTool(t, cs, "verify_thread_integrity", map[string]any{"thread_id": id}), "not_found")
			cs.Close()

			// WebSocket actions.
			c := connectWS(t, e, key)
			for _, m := range []map[string]any{
				step(id, "pay", "success", "k1", nil),
				{"action": "threadEnd", "threadId": id, "status": "completed"},
				{"action": "addRefs", "threadId": id, "refs": map[string]any{"a": "b"}},
				{"action": "joinThread", "threadId": id},
				{"action": "inviteParty", "threadId": id, "role": "shop"},
			} {
				r := c.call(m)
				if r["status"] != "error" || r["code"] != "not_found" {
					t.Errorf("ws %v with thread id %q: %v", m["action"], id, r)
				}
			}
		}
		// Other text with a NUL byte is a 400 on PostgreSQL too, not a 500.
		c := connectWS(t, e, key)
		r := c.call(map[string]any{"action": "startThread", "refs": map[string]any{"order\x00": "x"}})
		if r["code"] == "internal" || (e.Server.DB.Dialect == "postgres" && r["code"] != "validation_failed") {
			t.Errorf("startThread with a NUL in a ref key: %v", r)
		}
	})
}
