package threadstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadstore"
	threadsapp "github.com/threadengine/engine/app/threads"
)

// The generated columns of migration 00106 follow a thread's status: while
// it is active only active_minute is set (its updated_at's minute), once it
// ended only settled_at (its updated_at) and ended_duration_ms (its
// duration_ms).
func TestThreadSweepColumnsFollowStatus(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		threads, db, ctx := setup(t, d)
		th, err := threads.Application().Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: "g"})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if _, err := threads.Application().Commands.RecordStep.Handle(ctx, threadsapp.RecordStepInput{ThreadID: th.ID,
				StepName: fmt.Sprint("s", i), Status: "success", IdempotencyKey: "k", Context: map[string]string{}}); err != nil {
				t.Fatal(err)
			}
		}
		type cols struct {
			UpdatedAt time.Time     `db:"updated_at"`
			Settled   sql.NullTime  `db:"settled_at"`
			Minute    sql.NullInt64 `db:"active_minute"`
			Duration  int64         `db:"duration_ms"`
			Ended     int64         `db:"ended_duration_ms"`
		}
		read := func() cols {
			t.Helper()
			var c cols
			if err := db.GetContext(ctx, &c, db.Rebind(`SELECT updated_at, settled_at, active_minute, duration_ms, ended_duration_ms
 FROM threads WHERE id = ?`), th.ID); err != nil {
				t.Fatal(err)
			}
			return c
		}
		c := read()
		if c.Settled.Valid || !c.Minute.Valid || c.Minute.Int64 != sqldb.Minute(c.UpdatedAt) || c.Ended != 0 {
			t.Fatalf("active thread: %+v, want no settled_at, active_minute %d, ended_duration_ms 0", c, sqldb.Minute(c.UpdatedAt))
		}
		if _, err := threads.Application().Commands.EndThread.Handle(ctx, threadsapp.EndThreadInput{ThreadID: th.ID, Status: "completed"}); err != nil {
			t.Fatal(err)
		}
		c = read()
		if !c.Settled.Valid || !c.Settled.Time.Equal(c.UpdatedAt) || c.Minute.Valid || c.Ended != c.Duration {
			t.Fatalf("ended thread: %+v, want settled_at = updated_at, no active_minute, ended_duration_ms = duration_ms", c)
		}
	})
}

// A step's update of its thread row changes no indexed column of threads,
// so PostgreSQL makes it heap-only: no entry in any of the table's indexes
// (before migration 00106 every step inserted one into each of fifteen).
func TestStepUpdatesOfAThreadAreHeapOnly(t *testing.T) {
	threads, db, ctx := setup(t, sqldb.Postgres)
	th, err := threads.Application().Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: "hot"})
	if err != nil {
		t.Fatal(err)
	}
	const steps = 30
	for i := 0; i < steps; i++ {
		if _, err := threads.Application().Commands.RecordStep.Handle(ctx, threadsapp.RecordStepInput{ThreadID: th.ID,
			StepName: fmt.Sprint("s", i%4), Status: "success", IdempotencyKey: fmt.Sprint(i), Context: map[string]string{"i": fmt.Sprint(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	// Statistics reach pg_stat_user_tables when the writing connections go
	// idle (within a second of it): wait for every update to be counted.
	var upd, hot int64
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if err := db.QueryRowContext(ctx, `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relid = 'threads'::regclass`).
			Scan(&upd, &hot); err != nil {
			t.Fatal(err)
		}
		if upd >= steps || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // polling the statistics, not waiting out a time
	}
	if upd < steps {
		t.Fatalf("only %d updates of threads counted, want %d", upd, steps)
	}
	// A step may move the thread's active_minute (a new minute): allow two.
	if hot < upd-2 {
		t.Fatalf("%d of %d updates of threads heap-only; want all but a minute change", hot, upd)
	}
}

// The sweeps over threads read the indexes of migration 00106 (a range of
// active_minute or settled_at), never the whole table: with 2,000 threads,
// half of them ended, and statistics, each plan names one of them and no
// scan of threads.
func TestSweepPlansUseTheirIndexes(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		ctx := context.Background()
		now := time.Now().UTC()
		tx, err := db.BeginTxx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2000; i++ {
			status, at := "active", sqldb.Time(now.Add(-time.Duration(i)*time.Minute))
			var traceEnded any
			if i%2 == 1 {
				status = "completed"
			} else if i%10 == 0 {
				traceEnded = at
			}
			if _, err := tx.ExecContext(ctx, db.Rebind(`INSERT INTO threads (id, owner_kind, owner_id, status, created_at, updated_at, trace_root_ended_at)
 VALUES (?, 'user', 'u1', ?, ?, ?, ?)`), fmt.Sprintf("p%04d", i), status, at, at, traceEnded); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "ANALYZE"); err != nil {
			t.Fatal(err)
		}
		before, after := now.Add(-10*time.Hour), now.Add(-20*time.Hour)
		for _, c := range []struct {
			name, q string
			args    []any
			indexes []string // any of these
		}{
			{"silent", threadstore.SilentThreadsQuery, []any{sqldb.Minute(after), sqldb.Minute(before), before, after, 100},
				[]string{"threads_active_minute"}},
			{"quiet traces", threadstore.QuietTraceThreadsQuery, []any{sqldb.Minute(before), before, 100},
				[]string{"threads_trace_quiet_minute", "threads_active_minute"}},
			{"expired ended", threadstore.ExpiredEndedQuery, []any{before, 100}, []string{"threads_settled"}},
			{"expired idle", threadstore.ExpiredIdleQuery, []any{sqldb.Minute(before), before, 100}, []string{"threads_active_minute"}},
		} {
			plan := sqldbtest.Explain(t, db, c.q, c.args)
			text := strings.Join(plan, "\n")
			used := false
			for _, ix := range c.indexes {
				used = used || strings.Contains(text, ix)
			}
			scans := strings.Contains(text, "Seq Scan on threads") || strings.Contains(text, "SCAN threads") || strings.Contains(text, "SCAN t\n")
			if !used || scans {
				t.Errorf("%s: plan does not range over %v:\n%s", c.name, c.indexes, text)
			}
		}
	})
}

// An operator may add 00106's columns and indexes beforehand, at a quiet
// time (storage.md); the migration then skips them and only drops the
// indexes they replace.
func TestThreadSweepColumnsMayBeAddedBeforeTheMigration(t *testing.T) {
	ctx := context.Background()
	db := sqldbtest.OpenAt(t, sqldb.Postgres, 105)
	for _, q := range []string{
		`ALTER TABLE threads
 ADD COLUMN settled_at TIMESTAMPTZ GENERATED ALWAYS AS (CASE WHEN status <> 'active' THEN updated_at END) STORED,
 ADD COLUMN active_minute BIGINT GENERATED ALWAYS AS (CASE WHEN status = 'active'
  THEN CAST(floor(extract(epoch FROM (updated_at AT TIME ZONE 'UTC')) / 60) AS BIGINT) END) STORED,
 ADD COLUMN ended_duration_ms BIGINT GENERATED ALWAYS AS (CASE WHEN status = 'active' THEN 0 ELSE duration_ms END) STORED`,
		`CREATE INDEX CONCURRENTLY threads_settled ON threads (settled_at) WHERE settled_at IS NOT NULL`,
		`CREATE INDEX CONCURRENTLY threads_active_minute ON threads (active_minute) WHERE active_minute IS NOT NULL`,
		`CREATE INDEX CONCURRENTLY threads_trace_quiet_minute ON threads (active_minute) WHERE trace_root_ended_at IS NOT NULL AND active_minute IS NOT NULL`,
		`CREATE INDEX CONCURRENTLY threads_ended_duration_created_id ON threads (ended_duration_ms, created_at, id)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := db.MigrateUp(ctx, 0); err != nil {
		t.Fatalf("migrating after the columns were added: %v", err)
	}
	var names []string
	if err := db.SelectContext(ctx, &names, `SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'threads'
 AND indexname IN ('threads_settled', 'threads_active_minute', 'threads_trace_quiet_minute', 'threads_ended_duration_created_id',
 'threads_status_updated', 'threads_ended_updated', 'threads_trace_quiet', 'threads_duration_created_id') ORDER BY indexname`); err != nil {
		t.Fatal(err)
	}
	want := []string{"threads_active_minute", "threads_ended_duration_created_id", "threads_settled", "threads_trace_quiet_minute"}
	if !slices.Equal(names, want) {
		t.Fatalf("indexes of threads after the migration: %v, want %v", names, want)
	}
}

// TestAnInvalidPrebuiltIndexIsBuiltAgain: an operator may build 00107's
// and 00108's indexes beforehand with CREATE INDEX CONCURRENTLY; one such
// build that failed leaves an invalid index of that name, which IF NOT
// EXISTS alone would take for done — and 00108 then drops the wide time
// index it replaces, leaving the attempts' readers only the invalid one.
// The migrations build such an index again.
func TestAnInvalidPrebuiltIndexIsBuiltAgain(t *testing.T) {
	ctx := context.Background()
	db := sqldbtest.OpenAt(t, sqldb.Postgres, 106)
	var super bool
	if err := db.GetContext(ctx, &super, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`); err != nil {
		t.Fatal(err)
	}
	if !super {
		t.Skip("marking an index invalid needs a superuser (the CI server's postgres role is one)")
	}
	for _, q := range []string{
		`CREATE INDEX CONCURRENTLY threads_id_prefix2_created ON threads ((left(id, 2)), created_at, id)`,
		`CREATE INDEX CONCURRENTLY thread_activities_recorded_at ON thread_activities (recorded_at)`,
		// What a failed concurrent build leaves (the test's role may write
		// the catalog; an operator's failed build does it for real).
		`UPDATE pg_index SET indisvalid = false WHERE indexrelid IN (to_regclass('threads_id_prefix2_created'), to_regclass('thread_activities_recorded_at'))`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := db.MigrateUp(ctx, 0); err != nil {
		t.Fatalf("migrating after the failed builds: %v", err)
	}
	var rows []struct {
		Name  string `db:"name"`
		Valid bool   `db:"valid"`
	}
	if err := db.SelectContext(ctx, &rows, `SELECT c.relname AS name, i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
 WHERE c.relnamespace = current_schema()::regnamespace AND c.relname IN ('threads_id_prefix2_created', 'thread_activities_recorded_at', 'thread_activities_recorded')
 ORDER BY c.relname`); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Name != "thread_activities_recorded_at" || !rows[0].Valid || rows[1].Name != "threads_id_prefix2_created" || !rows[1].Valid {
		t.Fatalf("indexes after the migrations: %+v; want thread_activities_recorded_at and threads_id_prefix2_created, both valid", rows)
	}
}
