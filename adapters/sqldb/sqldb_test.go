package sqldb_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/domain"
)

func TestOpenMigratesBothDialects(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		var n int
		if err := db.GetContext(context.Background(), &n, "SELECT COUNT(*) FROM users"); err != nil {
			t.Fatalf("users table missing after migration: %v", err)
		}
		// Migrating twice is a no-op.
		if err := db.Migrate(context.Background()); err != nil {
			t.Fatalf("second migrate: %v", err)
		}
	})
}

func TestOpenRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"mysql://x", "postgres://u@127.0.0.1/db"} {
		if _, err := sqldb.Open(context.Background(), u); err == nil {
			t.Errorf("Open(%q) succeeded, want error naming database.url", u)
		}
	}
}

// SQLite serves one engine: a second open of the same file is refused with a
// message that says why, and allowed again once the first is closed.
func TestSQLiteRefusesASecondProcess(t *testing.T) {
	t.Parallel()
	u := sqldbtest.URL(t, sqldb.SQLite)
	first, err := sqldb.Open(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	_, err = sqldb.Open(context.Background(), u)
	if err == nil || !strings.Contains(err.Error(), "in use by another threadengine process") {
		first.Close()
		t.Fatalf("second open: %v", err)
	}
	// A one-shot command (bootstrap-owner) may still open it beside the engine.
	beside, err := sqldb.OpenAlongside(context.Background(), u)
	if err != nil {
		first.Close()
		t.Fatalf("open alongside: %v", err)
	}
	beside.Close()
	first.Close()
	again, err := sqldb.Open(context.Background(), u)
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	again.Close()
}

// A client that goes away mid-transaction (its context cancelled) is told
// its request was cancelled, not that the engine failed: database/sql rolls
// the transaction back and the next statement meets sql.ErrTxDone.
func TestTxCancelledMidwayIsUnavailableNotInternal(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		ctx, cancel := context.WithCancel(context.Background())
		err := db.Tx(ctx, func(tx *sqlx.Tx) error {
			if _, err := tx.ExecContext(ctx, "SELECT 1"); err != nil {
				return err
			}
			cancel()
			// database/sql closes the transaction from another goroutine.
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				if _, err := tx.Exec("SELECT 1"); err != nil {
					return err
				}
				time.Sleep(time.Millisecond)
			}
			return nil
		})
		var de *domain.Error
		if !errors.As(err, &de) || de.Kind != domain.KindUnavailable || de.Code != domain.CodeUnavailable {
			t.Fatalf("err = %v (%T), want the unavailable kind with code %s", err, err, domain.CodeUnavailable)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v does not wrap context.Canceled", err)
		}
	})
}

// AsyncCommit must turn synchronous_commit off for the transaction of the
// write it is in, and for no other: steps' commits still wait for the flush.
func TestAsyncCommitRelaxesOnlyItsOwnTransaction(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		ctx := context.Background()
		if d == sqldb.SQLite {
			if got := db.AsyncCommit(); got != "" {
				t.Fatalf("AsyncCommit on SQLite = %q, want none", got)
			}
			return
		}
		conn, err := db.Connx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		setting := func() string {
			var v string
			if err := conn.GetContext(ctx, &v, `SELECT current_setting('synchronous_commit')`); err != nil {
				t.Fatal(err)
			}
			return v
		}
		mustExec := func(q string) {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		mustExec(`CREATE TEMP TABLE relaxed (id int PRIMARY KEY, v int)`)
		mustExec(`INSERT INTO relaxed VALUES (1, 0)`)
		before := setting()
		if before == "off" {
			t.Skip("synchronous_commit is off on this server: nothing to relax")
		}
		mustExec(`BEGIN`)
		mustExec(`UPDATE relaxed SET v = v + 1 WHERE id = 1` + db.AsyncCommit())
		if got := setting(); got != "off" {
			t.Errorf("synchronous_commit inside the write's transaction = %q, want off", got)
		}
		mustExec(`COMMIT`)
		if got := setting(); got != before {
			t.Errorf("synchronous_commit after it = %q, want %q again", got, before)
		}
		var v int
		if err := conn.GetContext(ctx, &v, `SELECT v FROM relaxed WHERE id = 1`); err != nil || v != 1 {
			t.Errorf("the write applied %d times (err %v), want once", v, err)
		}
	})
}
