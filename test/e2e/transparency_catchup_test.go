package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/test/enginetest"
)

// A rolling upgrade from a release older than the transparency log: that
// release records a step without queueing its leaf (here its row, written
// in SQL while this release is stopped); the next engine to start appends
// it to the log.
func TestStartAppendsStepsWrittenWithoutTheirLeaf(t *testing.T) {
	t.Parallel()
	forEachDialectD(t, func(t *testing.T, d sqldb.Dialect) {
		first := enginetest.Start(t, d)
		c := connectWS(t, first, first.AdminKey)
		th := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		c.ok(step(th, "charge", "success", "c1", nil))
		_ = c.conn.CloseNow()
		// The backfill (which would append the row too) is over before the
		// older release writes.
		pollUntil(t, "the backfill done", func() bool {
			var b int
			if err := first.Server.DB.DB.Get(&b, `SELECT backfilled FROM tlog_state WHERE id = 1`); err != nil {
				t.Fatal(err)
			}
			return b == 1
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := first.Server.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}

		db, err := sqldb.Open(context.Background(), first.Config.Database.URL)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.DB.Exec(db.Rebind(`INSERT INTO thread_activities (id, thread_id, seq, step_name, idempotency_key, status, attempt,
 context, metadata, recorded_at, content_hash, hash, prev_hash) VALUES ('written-by-an-older-release', ?, 2, 'ship', 's1', 'success', 1,
 '{}', '{}', ?, '', ?, '')`), th, sqldb.Time(time.Now()), "hmac-sha256-1:"+strings.Repeat("ab", 32)); err != nil {
			t.Fatal(err)
		}
		db.Close() // an embedded SQLite database serves one process at a time

		next := enginetest.Start(t, d, enginetest.WithDatabase(first.Config.Database.URL), enginetest.WithoutOwner())
		pollUntil(t, "the older release's step appended to the log", func() bool {
			var n int
			if err := next.Server.DB.DB.Get(&n, next.Server.DB.Rebind(`SELECT count(*) FROM tlog_leaves WHERE step_id = ?`), "written-by-an-older-release"); err != nil {
				t.Fatal(err)
			}
			return n == 1
		})
	})
}
