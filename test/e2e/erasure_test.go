package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// auditCount counts audit lines with action and target.
func auditCount(t *testing.T, e *enginetest.Engine, action, target string) int {
	t.Helper()
	var n int
	db := e.Server.DB
	if err := db.Get(&n, db.Rebind(`SELECT COUNT(*) FROM audit_log WHERE action = ? AND target = ?`), action, target); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDeleteThreadREST(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, memberKey := e.NewUser(t, domain.RoleMember)
		_, viewerKey := e.NewUser(t, domain.RoleViewer)
		c := connectWS(t, e, memberKey)
		tid := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{"email": "someone@example.com"}})["threadId"].(string)
		c.ok(step(tid, "a", "success", "k1", map[string]any{"email": "someone@example.com"}))
		keep := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		c.ok(step(keep, "a", "success", "k1", nil))

		resp, body := e.Do(t, http.MethodDelete, "/v1/threads/"+tid, "", nil)
		wantProblem(t, resp, body, http.StatusUnauthorized, "unauthenticated")
		for _, key := range []string{memberKey, viewerKey} {
			resp, body = e.Do(t, http.MethodDelete, "/v1/threads/"+tid, key, nil)
			wantProblem(t, resp, body, http.StatusForbidden, "forbidden")
		}
		resp, body = e.Do(t, http.MethodDelete, "/v1/threads/"+tid, e.AdminKey, nil)
		wantStatus(t, resp, body, http.StatusNoContent)
		resp, body = e.Do(t, http.MethodDelete, "/v1/threads/"+tid, e.AdminKey, nil)
		wantProblem(t, resp, body, http.StatusNotFound, "not_found")

		db := e.Server.DB
		for _, q := range []string{`SELECT COUNT(*) FROM threads WHERE id = ?`, `SELECT COUNT(*) FROM thread_activities WHERE thread_id = ?`,
			`SELECT COUNT(*) FROM thread_refs WHERE thread_id = ?`, `SELECT COUNT(*) FROM thread_notifications WHERE thread_id = ?`} {
			var n int
			if err := db.Get(&n, db.Rebind(q), tid); err != nil || n != 0 {
				t.Fatalf("%s: %d %v", q, n, err)
			}
		}
		if n := auditCount(t, e, "thread.delete", tid); n != 1 {
			t.Fatalf("audit lines %d", n)
		}
		var details string
		if err := db.Get(&details, db.Rebind(`SELECT CAST(details AS TEXT) FROM audit_log WHERE target = ?`), tid); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(details, "someone@example.com") {
			t.Fatalf("the audit line keeps erased data: %s", details)
		}
		// The other thread is intact and still verifies; the deleted one is gone for GraphQL too.
		status, r, b := gqlPost(t, e, memberKey, `query($id: String!) { verifyThreadIntegrity(threadId: $id) { verified } }`, map[string]any{"id": keep})
		if status != http.StatusOK || len(r.Errors) != 0 || !strings.Contains(string(b), `"verified":true`) {
			t.Fatalf("kept thread: %d %s", status, b)
		}
		// The socket that wrote the thread gets not found for a new step.
		c.fails(step(tid, "b", "success", "k2", nil), "not found")
	})
}

func TestDeleteContractVersionREST(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, memberKey := e.NewUser(t, domain.RoleMember)
		for v := 1; v <= 2; v++ {
			resp, body := postYAML(t, e, e.AdminKey, "application/yaml", contractYAML(v))
			wantStatus(t, resp, body, http.StatusCreated)
		}
		c := connectWS(t, e, memberKey)
		c.ok(map[string]any{"action": "startThread", "contractName": "order_flow:1", "refs": map[string]any{}, "role": "checkout"})
		// Version 2 is cached by the engine once used.
		c.ok(map[string]any{"action": "startThread", "contractName": "order_flow:2", "refs": map[string]any{}, "role": "checkout"})
		resp, body := e.Do(t, http.MethodDelete, "/v1/contracts/order_flow/versions/2", memberKey, nil)
		wantProblem(t, resp, body, http.StatusForbidden, "forbidden")
		resp, body = e.Do(t, http.MethodDelete, "/v1/contracts/order_flow/versions/1", e.AdminKey, nil)
		p := wantProblem(t, resp, body, http.StatusConflict, string(domain.CodeContractVersionInUse))
		if !strings.Contains(p.Detail, "1 thread") {
			t.Fatalf("detail %q", p.Detail)
		}
		resp, body = e.Do(t, http.MethodDelete, "/v1/contracts/order_flow/versions/x", e.AdminKey, nil)
		wantProblem(t, resp, body, http.StatusBadRequest, "validation_failed")
		resp, body = e.Do(t, http.MethodDelete, "/v1/contracts/order_flow/versions/9", e.AdminKey, nil)
		wantProblem(t, resp, body, http.StatusNotFound, "not_found")

		// Delete the thread on version 1 and the one on version 2, then both versions.
		var ids []string
		if err := e.Server.DB.Select(&ids, `SELECT id FROM threads`); err != nil || len(ids) != 2 {
			t.Fatalf("threads %v %v", ids, err)
		}
		for _, id := range ids {
			resp, body = e.Do(t, http.MethodDelete, "/v1/threads/"+id, e.AdminKey, nil)
			wantStatus(t, resp, body, http.StatusNoContent)
		}
		resp, body = e.Do(t, http.MethodDelete, "/v1/contracts/order_flow/versions/2", e.AdminKey, nil)
		wantStatus(t, resp, body, http.StatusNoContent)
		if n := auditCount(t, e, "contract.delete", "order_flow:2"); n != 1 {
			t.Fatalf("audit lines %d", n)
		}
		resp, body = e.Do(t, http.MethodGet, "/v1/contracts/order_flow/versions/2", memberKey, nil)
		wantProblem(t, resp, body, http.StatusNotFound, "not_found")
		// The deleted version is gone from the engine's cache too.
		c.fails(map[string]any{"action": "startThread", "contractName": "order_flow:2", "refs": map[string]any{}, "role": "checkout"}, "not found")
		resp, body = e.Do(t, http.MethodGet, "/v1/contracts/order_flow", memberKey, nil)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"version":1`) {
			t.Fatalf("latest after deleting 2: %d %s", resp.StatusCode, body)
		}
		resp, body = e.Do(t, http.MethodDelete, "/v1/contracts/order_flow/versions/1", e.AdminKey, nil)
		wantStatus(t, resp, body, http.StatusNoContent)
		resp, body = e.Do(t, http.MethodGet, "/v1/contracts/order_flow", memberKey, nil)
		wantProblem(t, resp, body, http.StatusNotFound, "not_found")
		// The name is free again.
		resp, body = postYAML(t, e, e.AdminKey, "application/yaml", contractYAML(1))
		wantStatus(t, resp, body, http.StatusCreated)
	})
}
