package threadquery_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
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
		// stepStats' own statement, as the store runs it: its raw part
		// (the attempts since the roll-up's watermark) through an index —
		// the time index, or for a contract of few threads the threads'
		// attempts by (thread_id, seq) — never a scan of every attempt.
		if _, err := db.ExecContext(context.Background(), db.Rebind(`INSERT INTO stats_rollup (name, rolled_until) VALUES ('steps', ?)`), from); err != nil {
			t.Fatal(err)
		}
		s := threadquery.New(db)
		var stmts [][]any
		s.OnQuery(func(q string, args []any) { stmts = append(stmts, append([]any{q}, args...)) })
		if _, err := s.StepStats(context.Background(), "flow", 0); err != nil {
			t.Fatal(err)
		}
		s.OnQuery(nil)
		found := false
		for _, st := range stmts {
			if q := st[0].(string); strings.Contains(q, "FROM thread_activities a") {
				found = true
				if plan := explain(t, db, q, st[1:]); strings.Contains(plan, "Seq Scan on thread_activities") || strings.Contains(plan, "SCAN a\n") ||
					strings.HasSuffix(plan, "SCAN a") {
					t.Errorf("stepStats scans the attempts:\n%s\nplan:\n%s", q, plan)
				}
			}
		}
		if !found {
			t.Fatalf("stepStats read no attempts: %v", stmts)
		}
	})
}
