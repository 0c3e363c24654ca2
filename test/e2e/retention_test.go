package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/opshttp"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

func TestRetentionSettingAndSweep(t *testing.T) {
	t.Parallel()
	forEachDialectD(t, func(t *testing.T, d sqldb.Dialect) {
		e := enginetest.Start(t, d, enginetest.WithConfig(func(c *config.Config) { c.Retention.ThreadsDays = 30 }))
		_, memberKey := e.NewUser(t, domain.RoleMember)

		resp, body := e.Do(t, http.MethodGet, "/v1/engine/retention", e.AdminKey, nil)
		wantStatus(t, resp, body, http.StatusOK)
		if v := decode[opshttp.RetentionJSON](t, body); v.ThreadsDays != 30 || v.Source != "config" || v.ConfigThreadsDays != 30 {
			t.Fatalf("initial %+v", v)
		}
		resp, body = e.Do(t, http.MethodPut, "/v1/engine/retention", memberKey, map[string]any{"threads_days": 1})
		wantProblem(t, resp, body, http.StatusForbidden, "forbidden")
		resp, body = e.Do(t, http.MethodPut, "/v1/engine/retention", e.AdminKey, map[string]any{"threads_days": -3})
		wantProblem(t, resp, body, http.StatusBadRequest, "validation_failed")
		resp, body = e.Do(t, http.MethodPut, "/v1/engine/retention", e.AdminKey, map[string]any{})
		wantProblem(t, resp, body, http.StatusBadRequest, "validation_failed")
		resp, body = e.Do(t, http.MethodPut, "/v1/engine/retention", e.AdminKey, map[string]any{"threads_days": 7})
		wantStatus(t, resp, body, http.StatusOK)
		if v := decode[opshttp.RetentionJSON](t, body); v.ThreadsDays != 7 || v.Source != "ui" {
			t.Fatalf("after PUT %+v", v)
		}

		c := connectWS(t, e, memberKey)
		old := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		c.ok(step(old, "a", "success", "a1", nil))
		c.ok(map[string]any{"action": "threadEnd", "threadId": old, "status": "completed"})
		e.Clock.Advance(8 * 24 * time.Hour)
		kept := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		c.ok(map[string]any{"action": "threadEnd", "threadId": kept, "status": "completed"})

		res, err := e.Server.Retention.Sweeper.Sweep(context.Background())
		if err != nil || res.Threads != 1 {
			t.Fatalf("sweep %+v %v", res, err)
		}
		resp, body = e.Do(t, http.MethodGet, "/v1/threads/"+old+"/export", e.AdminKey, nil)
		wantProblem(t, resp, body, http.StatusNotFound, "not_found")
		resp, body = e.Do(t, http.MethodGet, "/v1/threads/"+kept+"/export", e.AdminKey, nil)
		wantStatus(t, resp, body, http.StatusOK)
		if n := len(listAudit(t, e, e.AdminKey, map[string][]string{"action": {"thread.retention_delete"}}).Entries); n != 1 {
			t.Fatalf("audit lines %d", n)
		}
		// The swept thread is found in the audit log by its id.
		if p := listAudit(t, e, e.AdminKey, map[string][]string{"target": {old}}); len(p.Entries) != 1 ||
			p.Entries[0].Action != "thread.retention_delete" || p.Entries[0].ActorID != "retention" {
			t.Fatalf("audit of the swept thread %+v", p.Entries)
		}

		resp, body = e.Do(t, http.MethodDelete, "/v1/engine/retention", e.AdminKey, nil)
		wantStatus(t, resp, body, http.StatusOK)
		if v := decode[opshttp.RetentionJSON](t, body); v.ThreadsDays != 30 || v.Source != "config" {
			t.Fatalf("after DELETE %+v", v)
		}
	})
}
