package threadstore_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadstore"
	threadsapp "github.com/threadengine/engine/app/threads"
)

// SQLite's per-thread listing (tlog_thread_leaves) is taken from the
// batches this process committed, as remembered at commit, and decoded from
// the batch rows for the others: a batch another store (process) wrote at
// the index of one this store rolled back, batches of a store that then
// "restarts" (a new store on the database, nothing remembered). Whichever
// way, the listing is exactly what the batch rows hold, and its inserts
// use fixed statement texts.
func TestSQLiteListingFromCommittedBatches(t *testing.T) {
	t.Parallel()
	db := sqldbtest.Open(t, sqldb.SQLite)
	a := newLogFixtureOn(t, db)
	b := newLogFixtureOn(t, db) // another process on the same database
	record := func(f *logFixture, threadID string, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			if _, err := f.threads.Application().Commands.RecordStep.Handle(f.ctx, threadsapp.RecordStepInput{ThreadID: threadID,
				StepName: "s", Status: "success", IdempotencyKey: fmt.Sprint(threadID, "-", n, "-", i), Context: map[string]string{}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	start := func(f *logFixture) string {
		t.Helper()
		th, err := f.threads.Application().Commands.StartThread.Handle(f.ctx, threadsapp.StartThreadInput{Label: "list"})
		if err != nil {
			t.Fatal(err)
		}
		return th.ID
	}
	flush := func(f *logFixture) {
		t.Helper()
		if _, err := f.store.FlushLog(f.ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The listing against the batches' own content, read in SQL.
	check := func() {
		t.Helper()
		var diff []string
		if err := db.Select(&diff, `WITH want AS (
 SELECT json_extract(j.value, '$.thread_id') AS thread_id, b.start + j.key AS idx, b.start AS batch,
  CASE json_extract(j.value, '$.type') WHEN 'step' THEN json_extract(j.value, '$.step_id') END AS step_id
 FROM tlog_batches b, json_each(b.leaves) j
 WHERE b.start < (SELECT indexed_to FROM tlog_state))
SELECT 'missing ' || idx || ' ' || thread_id FROM (SELECT * FROM want EXCEPT SELECT thread_id, idx, batch, step_id FROM tlog_thread_leaves)
UNION ALL
SELECT 'extra ' || idx || ' ' || thread_id FROM (SELECT thread_id, idx, batch, step_id FROM tlog_thread_leaves EXCEPT SELECT * FROM want)`); err != nil {
			t.Fatal(err)
		}
		if len(diff) > 0 {
			t.Fatalf("the listing is not the batches' content: %v", diff)
		}
		var indexed, size int64
		if err := db.QueryRow(`SELECT indexed_to, (SELECT MAX(start + count) FROM tlog_batches) FROM tlog_state`).Scan(&indexed, &size); err != nil || indexed != size {
			t.Fatalf("indexed to %d of %d: %v", indexed, size, err)
		}
	}

	ta, _ := a.thread(t, 3)
	// Rounds of 1 to 10 entries: the listing's inserts are prepared
	// statements of fixed texts, not one text per count.
	for k := 1; k <= 10; k++ {
		record(a, ta, k)
		flush(a)
	}
	check()
	if n := a.store.CachedStatementsContaining("INTO tlog_thread_leaves"); n < 1 || n > 3 {
		t.Fatalf("%d prepared statements insert into tlog_thread_leaves after rounds of 10 sizes, want 1 to 3", n)
	}

	// A batch a rolls back, then b commits one at the same index: a must
	// list b's leaves there, not its own rolled-back ones.
	record(a, ta, 2)
	if err := a.store.AppendTombstonesRolledBack(a.ctx, []string{"ghost-thread"}); err != nil {
		t.Fatal(err)
	}
	tb := start(b)
	record(b, tb, 3)
	record(a, ta, 2)
	flush(a)
	check()
	var ghost int
	if err := db.Get(&ghost, `SELECT COUNT(*) FROM tlog_thread_leaves WHERE thread_id = 'ghost-thread'`); err != nil || ghost != 0 {
		t.Fatalf("%d entries of the rolled-back batch: %v", ghost, err)
	}

	// a's commits listed by a store that remembers none of them (a restart),
	// then a's own round finds them listed.
	record(a, ta, 4)
	c := threadstore.New(db)
	if _, err := c.FlushLog(a.ctx); err != nil {
		t.Fatal(err)
	}
	check()
	record(a, ta, 1)
	flush(a)
	check()
	for _, id := range []string{ta, tb} {
		if st, err := a.queries.VerifyThread.Handle(a.ctx, id); err != nil || !st.Verified {
			t.Fatalf("verify %s: %+v %v", id, st, err)
		}
	}
}

// The batch's leaves column is the bytes encoding/json writes (with
// SetEscapeHTML(false), as it was written before) for any valid UTF-8.
func TestLeavesJSONIsEncodingJSON(t *testing.T) {
	t.Parallel()
	data := [][]byte{
		[]byte(`{"thread_id":"a","type":"step"}`),
		[]byte("quotes \" and \\ back\\slashes \\\" <html> & é ü 漢 \u2028 \u2029 \u2027 \u202a"),
		[]byte("controls \x00\x01\x07\b\t\n\v\f\r\x1b\x1f\x7f end"),
		{},
		[]byte(`"`),
		[]byte("\u2028"),
	}
	for n := 0; n <= len(data); n++ {
		strs := make([]string, n)
		for i, d := range data[:n] {
			strs[i] = string(d)
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(strs); err != nil {
			t.Fatal(err)
		}
		want := string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
		if got := threadstore.LeavesJSON(data[:n]); got != want {
			t.Fatalf("%d leaves:\n got %s\nwant %s", n, got, want)
		}
	}
}
