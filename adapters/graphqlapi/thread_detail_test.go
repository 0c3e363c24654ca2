package graphqlapi

import (
	"testing"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/app/readmodel"
)

// The thread detail query reads the parts asked for, one statement each
// (MCP get_thread asks for all of them), and GraphQL thread(id) answers from
// it on the row read while pricing: its notificationSummary is the query's
// counts, with no statement beyond the row and the counts.
func TestThreadDetailReadsTheAskedParts(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		f := newFixture(t, d)
		s := f.seed(t, "detail", 3)
		f.statements.Store(0)
		all, err := f.h.queries.Detail.Handle(f.ctx, readmodel.ThreadDetailArgs{ThreadLocator: readmodel.ThreadLocator{ThreadID: s.ID},
			Parts: readmodel.AllDetailParts(5, 5, 2)})
		if err != nil {
			t.Fatal(err)
		}
		allStatements := f.statements.Load()
		if all.Thread.ID != s.ID || len(all.Steps) == 0 || all.Refs[s.RefKey] != s.RefValue || all.NotificationCounts.Total == 0 {
			t.Fatalf("detail: %+v", all)
		}
		f.statements.Store(0)
		one, err := f.h.queries.Detail.Handle(f.ctx, readmodel.ThreadDetailArgs{Located: &all.Thread,
			Parts: readmodel.DetailParts{NotificationCounts: true}})
		if err != nil || one.NotificationCounts != all.NotificationCounts || one.Steps != nil || one.Notifications != nil {
			t.Fatalf("counts only: %+v %v", one, err)
		}
		if n := f.statements.Load(); n != 1 || allStatements < 7 {
			t.Errorf("a located thread's counts: %d statements, want 1 (every part from its locator: %d)", n, allStatements)
		}

		f.statements.Store(0)
		r, status := f.exec(t, `query($id: ID!){ thread(id: $id) { id notificationSummary { totalNotifications } } }`, map[string]any{"id": s.ID})
		if status != 200 || len(r.Errors) > 0 {
			t.Fatalf("%d %+v", status, r)
		}
		total := r.Data["thread"].(map[string]any)["notificationSummary"].(map[string]any)["totalNotifications"]
		if total != float64(all.NotificationCounts.Total) {
			t.Errorf("notificationSummary.totalNotifications %v, want the detail's %d", total, all.NotificationCounts.Total)
		}
		if n := f.statements.Load(); n != 2 {
			t.Errorf("thread(id) with its summary: %d statements, want 2 (the row while pricing, the counts)", n)
		}
	})
}
