package e2e

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

type auditPage struct {
	Entries []struct {
		ID        string         `json:"id"`
		At        time.Time      `json:"at"`
		ActorKind string         `json:"actor_kind"`
		ActorID   string         `json:"actor_id"`
		ActorName string         `json:"actor_name"`
		Action    string         `json:"action"`
		Target    string         `json:"target"`
		Details   map[string]any `json:"details"`
	} `json:"entries"`
	NextCursor string `json:"next_cursor"`
}

func listAudit(t *testing.T, e *enginetest.Engine, key string, q url.Values) auditPage {
	t.Helper()
	resp, body := e.Do(t, http.MethodGet, "/v1/audit?"+q.Encode(), key, nil)
	wantStatus(t, resp, body, http.StatusOK)
	return decode[auditPage](t, body)
}

func TestAuditListing(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		member, memberKey := e.NewUser(t, domain.RoleMember)
		// Three contract uploads and a role change, a second apart.
		for v := 1; v <= 3; v++ {
			e.Clock.Advance(time.Second)
			resp, body := postYAML(t, e, e.AdminKey, "application/yaml", contractYAML(v))
			wantStatus(t, resp, body, http.StatusCreated)
		}
		e.Clock.Advance(time.Second)
		resp, body := e.Do(t, http.MethodPatch, "/v1/users/"+member.ID, e.AdminKey, map[string]any{"role": "viewer"})
		wantStatus(t, resp, body, http.StatusOK)

		resp, body = e.Do(t, http.MethodGet, "/v1/audit", memberKey, nil)
		wantProblem(t, resp, body, http.StatusForbidden, "forbidden")
		resp, body = e.Do(t, http.MethodGet, "/v1/audit", "", nil)
		wantProblem(t, resp, body, http.StatusUnauthorized, "unauthenticated")

		all := listAudit(t, e, e.AdminKey, nil)
		if len(all.Entries) < 5 || all.NextCursor != "" {
			t.Fatalf("all: %+v", all)
		}
		if all.Entries[0].Action != "user.updated" || all.Entries[0].ActorID != e.Admin.ID || all.Entries[0].Target != member.ID {
			t.Fatalf("newest first: %+v", all.Entries[0])
		}
		// The actor is named (full name, else email), not only a UUID.
		wantName := e.Admin.FullName
		if wantName == "" {
			wantName = e.Admin.Email
		}
		if wantName == "" || all.Entries[0].ActorName != wantName {
			t.Fatalf("actor_name %q, want %q", all.Entries[0].ActorName, wantName)
		}

		// Pages of one, by action prefix, newest first, until the cursor runs out.
		var got []string
		q := url.Values{"action": {"contract."}, "limit": {"1"}}
		for range 5 {
			p := listAudit(t, e, e.AdminKey, q)
			for _, en := range p.Entries {
				got = append(got, en.Target)
			}
			if p.NextCursor == "" {
				break
			}
			q.Set("cursor", p.NextCursor)
		}
		if len(got) != 3 || got[0] != "order_flow:3" || got[2] != "order_flow:1" {
			t.Fatalf("pages %v", got)
		}
		// Exact action, target, actor and a time window.
		if p := listAudit(t, e, e.AdminKey, url.Values{"action": {"contract.upload"}, "target": {"order_flow:2"}, "actor_id": {e.Admin.ID}}); len(p.Entries) != 1 ||
			p.Entries[0].Details["version"] != float64(2) {
			t.Fatalf("target filter %+v", p)
		}
		if p := listAudit(t, e, e.AdminKey, url.Values{"action": {"contract"}}); len(p.Entries) != 0 {
			t.Fatalf("an action without a dot is exact: %+v", p)
		}
		since := all.Entries[0].At.Add(-1500 * time.Millisecond).Format(time.RFC3339Nano)
		until := all.Entries[0].At.Format(time.RFC3339Nano)
		if p := listAudit(t, e, e.AdminKey, url.Values{"since": {since}, "until": {until}}); len(p.Entries) != 1 || p.Entries[0].Target != "order_flow:3" {
			t.Fatalf("window %+v", p)
		}

		for _, bad := range []string{"cursor=nope", "limit=0", "limit=501", "since=yesterday"} {
			resp, body = e.Do(t, http.MethodGet, "/v1/audit?"+bad, e.AdminKey, nil)
			wantProblem(t, resp, body, http.StatusBadRequest, "validation_failed")
		}
	})
}
