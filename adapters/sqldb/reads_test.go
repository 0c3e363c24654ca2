package sqldb_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/domain"
)

// longRead is a read that runs until its context ends; tag marks it (on
// PostgreSQL) so that pg_stat_activity tells this test's reads apart.
func longRead(d sqldb.Dialect, tag string) string {
	if d == sqldb.Postgres {
		return `SELECT pg_sleep(600) /* ` + tag + ` */`
	}
	return `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n`
}

// waitRunning waits until n reads tagged tag are running on the server
// (PostgreSQL). A connection counted in use may not have sent its query
// yet, and PostgreSQL ignores a cancel request that arrives before the
// query: cancelled then, pg_sleep(600) ran its 10 minutes on a loaded
// machine.
func waitRunning(t *testing.T, db *sqldb.DB, tag string, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var running int
		if err := db.GetContext(context.Background(), &running, `SELECT COUNT(*) FROM pg_stat_activity
 WHERE state = 'active' AND wait_event = 'PgSleep' AND query LIKE '%' || $1 || '%' AND pid <> pg_backend_pid()`, tag); err != nil {
			t.Fatal(err)
		}
		if running >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d reads running", running, n)
		}
		time.Sleep(time.Millisecond) // polling the server, not waiting for time to pass
	}
}

// Reads run on a pool of their own: with every read connection held by
// reads that do not end, a writer still gets a connection and commits
// (issue 25 item 2: six expensive reads held all 25 connections and
// ingest dropped to 0). The read pool refuses writes.
func TestReadPoolLeavesWritersTheirConnections(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		reads, err := db.OpenReads(context.Background(), sqldb.ReadOptions{Conns: 2})
		if err != nil {
			t.Fatal(err)
		}
		if reads == db {
			t.Skip("an in-memory database has no read pool")
		}
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 3)
		tag := "reads-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		for i := 0; i < 3; i++ { // one more than the pool: it waits for a connection
			go func() {
				var n int64
				done <- reads.QueryRowxContext(ctx, longRead(d, tag)).Scan(&n)
			}()
		}
		for reads.Stats().InUse < 2 {
			time.Sleep(time.Millisecond) // polling a counter, not waiting for time to pass
		}
		if d == sqldb.Postgres {
			waitRunning(t, db, tag, 2)
		}
		wctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := db.ExecContext(wctx, `CREATE TABLE reads_probe (x INTEGER)`); err != nil {
			t.Fatalf("a write while every read connection is held: %v", err)
		}
		if in := reads.Stats().InUse; in != 2 {
			t.Fatalf("read connections in use %d, want 2", in)
		}
		t.Logf("%s: read pool in use %d/2, waiting reads %d, writer pool in use %d after its write",
			d, reads.Stats().InUse, reads.Stats().WaitCount, db.Stats().InUse)
		stop()
		for i := 0; i < 3; i++ {
			if err := <-done; err == nil {
				t.Fatal("a read that cannot end ended")
			}
		}
		if _, err := reads.ExecContext(context.Background(), `CREATE TABLE reads_probe2 (x INTEGER)`); err == nil {
			t.Fatal("the read pool wrote")
		}
	})
}

// On PostgreSQL the read pool's statement_timeout stops a statement the
// engine's own deadline did not reach, answered query_timeout.
func TestReadPoolStatementTimeout(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		if d != sqldb.Postgres {
			t.Skip("SQLite reads are stopped by their context (TestReadPoolLeavesWritersTheirConnections)")
		}
		db := sqldbtest.Open(t, d)
		reads, err := db.OpenReads(context.Background(), sqldb.ReadOptions{Conns: 1, StatementTimeout: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		err = sqldb.TranslateError(reads.QueryRowxContext(context.Background(), longRead(d, "timeout")).Scan(&n))
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != domain.CodeQueryTimeout {
			t.Fatalf("want query_timeout, got %v", err)
		}
	})
}
