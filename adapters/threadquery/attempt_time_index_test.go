package threadquery_test

import (
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
)

// The readers of attempts by recording time — the hourly roll-up (an hour
// joined to the threads), the overview's attempts since the roll-up's
// watermark — read them through the time index: on PostgreSQL the B-tree
// on recorded_at alone of migration 00108 (which replaced the wider
// thread_activities_recorded), on SQLite the wider one, index-only for the
// overview's columns. Without the index each is a scan of every attempt.
func TestAttemptsByTimeUseTheTimeIndex(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		h := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
		from, to := sqldb.Time(h), sqldb.Time(h.Add(time.Hour))
		want := "thread_activities_recorded"
		if d == sqldb.Postgres {
			want = "thread_activities_recorded_at"
		}
		for _, st := range [][]any{
			{`SELECT COALESCE(t.contract_name, ''), a.step_name, COUNT(*) FROM thread_activities a JOIN threads t ON t.id = a.thread_id
 WHERE a.recorded_at >= ? AND a.recorded_at < ? GROUP BY COALESCE(t.contract_name, ''), a.step_name`, from, to},
			{`SELECT a.step_name, CASE WHEN a.status IN ('failed','error') THEN 1 ELSE 0 END FROM thread_activities a WHERE a.recorded_at >= ?`, from},
		} {
			plan := explain(t, db, db.Rebind(st[0].(string)), st[1:])
			if !strings.Contains(plan, want) {
				t.Errorf("%s\nplan:\n%s\nwant %s", st[0], plan, want)
			}
		}
	})
}
