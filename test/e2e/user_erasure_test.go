package e2e

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// DELETE /v1/users/:id erases an archived user's personal data: the user
// stays under its id with a placeholder address; its email is gone from the
// user list and the audit log; the threads it wrote still verify; an active
// user (the last admin included) cannot be erased.
func TestEraseArchivedUser(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		u, key := e.NewUser(t, domain.RoleMember)
		email := u.Email
		c := connectWS(t, e, key)
		th := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		c.ok(step(th, "a", "success", "a1", nil))
		c.conn.CloseNow()

		_, memberKey := e.NewUser(t, domain.RoleMember)
		resp, body := e.Do(t, http.MethodDelete, "/v1/users/"+u.ID, memberKey, nil)
		wantProblem(t, resp, body, http.StatusForbidden, "forbidden")
		resp, body = e.Do(t, http.MethodDelete, "/v1/users/"+u.ID, e.AdminKey, nil)
		wantProblem(t, resp, body, http.StatusConflict, "user_not_archived")
		resp, body = e.Do(t, http.MethodDelete, "/v1/users/"+e.Admin.ID, e.AdminKey, nil)
		wantProblem(t, resp, body, http.StatusConflict, "user_not_archived")
		resp, body = e.Do(t, http.MethodDelete, "/v1/users/no-such-user", e.AdminKey, nil)
		wantProblem(t, resp, body, http.StatusNotFound, "not_found")

		resp, body = patchUser(t, e, e.AdminKey, u.ID, map[string]any{"status": "archived"})
		wantStatus(t, resp, body, http.StatusOK)
		resp, body = e.Do(t, http.MethodDelete, "/v1/users/"+u.ID, e.AdminKey, nil)
		wantStatus(t, resp, body, http.StatusOK)
		erased := decode[struct {
			User struct {
				ID       string     `json:"id"`
				Email    string     `json:"email"`
				FullName *string    `json:"full_name"`
				Status   string     `json:"status"`
				ErasedAt *time.Time `json:"erased_at"`
			} `json:"user"`
		}](t, body)
		if erased.User.ID != u.ID || erased.User.Email != domain.ErasedEmail(u.ID) || erased.User.FullName == nil || *erased.User.FullName != "" ||
			erased.User.Status != "archived" || erased.User.ErasedAt == nil {
			t.Fatalf("erased: %s", body)
		}
		// Again: the same answer, nothing more audited.
		resp, body = e.Do(t, http.MethodDelete, "/v1/users/"+u.ID, e.AdminKey, nil)
		wantStatus(t, resp, body, http.StatusOK)

		resp, body = e.Do(t, http.MethodGet, "/v1/users", e.AdminKey, nil)
		wantStatus(t, resp, body, http.StatusOK)
		if strings.Contains(strings.ToLower(string(body)), email) || !strings.Contains(string(body), domain.ErasedEmail(u.ID)) {
			t.Fatalf("user list after erasure: %s", body)
		}
		all := listAudit(t, e, e.AdminKey, url.Values{"limit": {"500"}})
		erasures := 0
		for _, en := range all.Entries {
			for k, v := range en.Details {
				if s, ok := v.(string); ok && strings.Contains(strings.ToLower(s), email) {
					t.Errorf("audit %s %s keeps the email in %s: %v", en.Action, en.Target, k, v)
				}
			}
			if en.Action == "user.erased" {
				erasures++
				if en.Target != u.ID || en.ActorID != e.Admin.ID {
					t.Errorf("erasure entry %+v", en)
				}
			}
		}
		if erasures != 1 {
			t.Errorf("%d user.erased entries", erasures)
		}
		// The invitation is still found by the user's id, pseudonymous.
		if p := listAudit(t, e, e.AdminKey, url.Values{"target": {u.ID}, "action": {"user.invited"}}); len(p.Entries) != 1 ||
			p.Entries[0].Details["email"] != domain.ErasedEmail(u.ID) {
			t.Errorf("invitation entry %+v", p.Entries)
		}
		// The erased user's key is refused; the address may be invited again.
		resp, body = e.Do(t, http.MethodGet, "/v1/users", key, nil)
		wantStatus(t, resp, body, http.StatusUnauthorized)
		e.InviteUser(t, email, domain.RoleViewer)

		// The record is untouched: the thread it wrote verifies, its steps
		// still name the user by id.
		status, r, raw := gqlPost(t, e, e.AdminKey, `query($id: String!) { verifyThreadIntegrity(threadId: $id) { verified totalEvents } }`,
			map[string]any{"id": th})
		if v := r.Data["verifyThreadIntegrity"]; status != http.StatusOK || v == nil || v.(map[string]any)["verified"] != true {
			t.Fatalf("integrity after erasure: %d %s", status, raw)
		}
	})
}

// audit.retention_days deletes older audit lines in the background sweep;
// the sweep leaves a line saying how many went.
func TestAuditRetention(t *testing.T) {
	t.Parallel()
	forEachDialectD(t, func(t *testing.T, d sqldb.Dialect) {
		e := enginetest.Start(t, d, enginetest.WithConfig(func(c *config.Config) { c.Audit.RetentionDays = 30 }))
		old := e.InviteUser(t, "old@example.com", domain.RoleViewer)
		e.Clock.Advance(31 * 24 * time.Hour)
		recent := e.InviteUser(t, "recent@example.com", domain.RoleViewer)
		n, err := e.Server.AuditRetention.Sweep(context.Background())
		if err != nil || n < 2 { // the owner's bootstrap and the first invitation
			t.Fatalf("sweep %d %v", n, err)
		}
		if p := listAudit(t, e, e.AdminKey, url.Values{"target": {old.ID}}); len(p.Entries) != 0 {
			t.Errorf("old entries kept: %+v", p.Entries)
		}
		if p := listAudit(t, e, e.AdminKey, url.Values{"target": {recent.ID}}); len(p.Entries) != 1 {
			t.Errorf("recent entries: %+v", p.Entries)
		}
		p := listAudit(t, e, e.AdminKey, url.Values{"action": {"audit.retention_delete"}})
		if len(p.Entries) != 1 || p.Entries[0].Details["entries"] != float64(n) {
			t.Errorf("sweep entry %+v", p.Entries)
		}
	})
}
