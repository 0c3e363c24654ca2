package threadstore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/domain"
)

// A binary released before the log (chain version 1, no outbox) records a
// step during a rolling upgrade: the catch-up appends it (once, whichever
// replicas run it), with the hash of its record; a version-2 step without
// a leaf (no release writes one) is left for verification to report.
func TestCatchUpLogsStepsOfBinariesOlderThanTheLog(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		f := newLogFixture(t, d)
		id, _ := f.thread(t, 1)
		if _, err := f.store.BackfillLog(f.ctx); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		if n, err := f.store.CatchUpLog(f.ctx, now); err != nil || n != 0 {
			t.Fatalf("nothing to catch up: %d %v", n, err)
		}
		// What the older binary writes: the step row, a version-1 link, no
		// tlog_pending row.
		insert := func(stepID string, seq int, hash string) {
			f.exec(t, `INSERT INTO thread_activities (id, thread_id, seq, step_name, idempotency_key, status, attempt, context, metadata,
 recorded_at, content_hash, hash, prev_hash) VALUES (?, ?, ?, 'ship', ?, 'success', 1, '{}', '{}', ?, '', ?, '')`,
				stepID, id, seq, stepID, sqldb.Time(time.Now()), hash)
		}
		insert("pre-log-step", 2, "hmac-sha256-1:"+strings.Repeat("ab", 32))
		insert("forged-v2", 3, domain.StepHashPrefix+strings.Repeat("cd", 32))
		leafOf := func(stepID string) string {
			var data []string
			if err := f.db.Select(&data, f.db.Rebind(`SELECT data FROM tlog_leaves WHERE step_id = ?`), stepID); err != nil {
				t.Fatal(err)
			}
			return strings.Join(data, "|")
		}
		n, err := f.store.CatchUpLog(f.ctx, now.Add(time.Minute))
		if err != nil || n != 1 {
			t.Fatalf("catch-up appended %d (%v), want the older binary's step", n, err)
		}
		if l := leafOf("pre-log-step"); !strings.Contains(l, `"record_hash":"sha256:`) || !strings.Contains(l, `"step_id":"pre-log-step"`) {
			t.Fatalf("leaf %q, want one step leaf with its record's hash", l)
		}
		if l := leafOf("forged-v2"); l != "" {
			t.Fatalf("a version-2 step without its leaf was appended: %s", l)
		}
		// Idempotent: a second pass (another replica's, or the next one)
		// appends nothing.
		if n, err := f.store.CatchUpLog(f.ctx, now.Add(2*time.Minute)); err != nil || n != 0 {
			t.Fatalf("second pass appended %d (%v)", n, err)
		}
		if _, err := f.store.FlushLog(f.ctx); err != nil {
			t.Fatal(err)
		}
		var size, leaves int
		if err := f.db.Get(&size, `SELECT size FROM tlog_state WHERE id = 1`); err != nil {
			t.Fatal(err)
		}
		if err := f.db.Get(&leaves, `SELECT count(*) FROM tlog_leaves`); err != nil {
			t.Fatal(err)
		}
		if size != leaves {
			t.Fatalf("tree size %d, %d leaves", size, leaves)
		}
	})
}
