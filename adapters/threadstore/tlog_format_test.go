package threadstore_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// SQLite's log across migration 00099 (one tlog_batches row per appending
// transaction): leaves written in the row-per-leaf format (what migration
// 00099's Down converts them back to, i.e. what an earlier release wrote)
// and leaves written after it are one tree. After a restart (empty hash
// cache), appends that need the old format's hashes, every thread's
// verification, every inclusion and consistency proof, a step's leaf by id
// and the detection of deleted steps and threads work across both formats;
// rolling the migration back again yields the same tree in rows.
func TestSQLiteLogAcrossTheBatchMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sqldbtest.Open(t, sqldb.SQLite)
	f := newLogFixtureOn(t, db)
	a, aSteps := f.thread(t, 3)
	root := func(f *logFixture) (int64, tlog.Hash) {
		t.Helper()
		st, err := f.store.LogState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		h, err := tlog.TreeHash(st.Size, f.store.Hashes(ctx))
		if err != nil {
			t.Fatal(err)
		}
		return st.Size, h
	}
	// rowsTree checks the log as rows (before migration 00099): one leaf row
	// per index and the stored hashes, whose tree is want.
	rowsTree := func(size int64, want tlog.Hash) {
		t.Helper()
		var leaves, distinct int64
		if err := db.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT idx) FROM tlog_leaves WHERE idx < ?`, size).Scan(&leaves, &distinct); err != nil ||
			leaves != size || distinct != size {
			t.Fatalf("%d leaf rows (%d distinct), want %d: %v", leaves, distinct, size, err)
		}
		var stateSize int64
		if err := db.Get(&stateSize, `SELECT size FROM tlog_state`); err != nil || stateSize != size {
			t.Fatalf("tlog_state.size %d, want %d: %v", stateSize, size, err)
		}
		var hashes int64
		if err := db.Get(&hashes, `SELECT COUNT(*) FROM tlog_hashes`); err != nil || hashes != tlog.StoredHashIndex(0, size) {
			t.Fatalf("%d stored hash rows, want %d: %v", hashes, tlog.StoredHashIndex(0, size), err)
		}
		got, err := tlog.TreeHash(size, tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
			out := make([]tlog.Hash, len(idx))
			for i, x := range idx {
				var b []byte
				if err := db.Get(&b, `SELECT hash FROM tlog_hashes WHERE idx = ?`, x); err != nil {
					return nil, fmt.Errorf("hash %d: %w", x, err)
				}
				copy(out[i][:], b)
			}
			return out, nil
		}))
		if err != nil || got != want {
			t.Fatalf("tree of the rows: %v, want %v (%v)", got, want, err)
		}
	}
	floor := func(want int64) {
		t.Helper()
		var got int64
		if err := db.Get(&got, `SELECT min_binary_schema FROM schema_compat`); err != nil || got != want {
			t.Fatalf("schema floor %d, want %d: %v", got, want, err)
		}
	}
	floor(sqldb.EmbeddedFloorOf(sqldb.SQLite)) // 101 since 00102; 00099's trigger keeps it at 99 or above
	size1, root1 := root(f)
	if _, err := db.MigrateDown(ctx, 98); err != nil {
		t.Fatal(err)
	}
	rowsTree(size1, root1)
	floor(1)
	if _, err := db.MigrateUp(ctx, 99); err != nil {
		t.Fatal(err)
	}
	floor(99) // binaries before 00099 neither write nor read the batches
	if _, err := db.MigrateUp(ctx, 0); err != nil {
		t.Fatal(err)
	}
	floor(sqldb.EmbeddedFloorOf(sqldb.SQLite))
	var batches int
	if err := db.Get(&batches, `SELECT COUNT(*) FROM tlog_batches`); err != nil || batches != 0 {
		t.Fatalf("%d batches after the migration, want the old rows kept as they are: %v", batches, err)
	}

	// A restarted engine appends to both threads and a new one.
	f = newLogFixtureOn(t, db)
	for i := 4; i <= 5; i++ {
		if _, err := f.threads.Application().Commands.RecordStep.Handle(f.ctx, threadsapp.RecordStepInput{ThreadID: a,
			StepName: fmt.Sprint("s", i), Status: "success", IdempotencyKey: fmt.Sprint("k", i), Context: map[string]string{}}); err != nil {
			t.Fatal(err)
		}
	}
	// Not indexed by thread yet (the sequencer's next round): found all
	// the same.
	var entries int
	if err := db.Get(&entries, `SELECT COUNT(*) FROM tlog_thread_leaves`); err != nil || entries != 0 {
		t.Fatalf("%d thread entries before the sequencer ran: %v", entries, err)
	}
	if st, err := f.queries.VerifyThread.Handle(f.ctx, a); err != nil || !st.Verified || st.Log == nil || st.Log.Leaves != 5 {
		t.Fatalf("thread a before indexing: %+v %v", st, err)
	}
	b, bSteps := f.thread(t, 2) // flushes: the sequencer's round
	c, _ := f.thread(t, 1)
	size2, root2 := root(f)
	if size2 != size1+5 {
		t.Fatalf("log size %d, want %d", size2, size1+5)
	}
	if err := db.Get(&batches, `SELECT COUNT(*) FROM tlog_batches`); err != nil || batches != 5 {
		t.Fatalf("%d batches, want one per step transaction (5): %v", batches, err)
	}
	var indexedTo int64
	if err := db.QueryRow(`SELECT (SELECT COUNT(*) FROM tlog_thread_leaves), indexed_to FROM tlog_state`).Scan(&entries, &indexedTo); err != nil ||
		entries != 5 || indexedTo != size2 {
		t.Fatalf("%d thread entries indexed to %d, want 5 to %d: %v", entries, indexedTo, size2, err)
	}
	for _, id := range []string{a, b, c} {
		st, err := f.queries.VerifyThread.Handle(f.ctx, id)
		if err != nil || !st.Verified || st.Log == nil || st.Log.Unlogged != 0 {
			t.Fatalf("thread %s: %+v %v", id, st, err)
		}
	}

	// Leaves of both formats, in log order, with their stored hashes.
	leaves, err := f.store.ThreadLeaves(ctx, []string{a, b, c})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]tlog.Hash, size2)
	seen := 0
	for _, ls := range leaves {
		if !slices.IsSortedFunc(ls, func(x, y ports.LogLeafRecord) int { return cmp.Compare(x.Index, y.Index) }) {
			t.Fatalf("leaves out of order: %+v", ls)
		}
		for _, l := range ls {
			if l.Stored != domain.LeafHash(l.Data) {
				t.Fatalf("leaf %d: stored hash differs from its data", l.Index)
			}
			want[l.Index], seen = l.Stored, seen+1
		}
	}
	if int64(seen) != size2 || len(leaves[a]) != 5 {
		t.Fatalf("%d leaves read (thread a: %d), want %d", seen, len(leaves[a]), size2)
	}
	for i, id := range append(aSteps, bSteps...) {
		l, err := f.store.StepLeaf(ctx, id)
		if err != nil || l.Leaf.StepID != id || (i < 3) != (l.Index < size1) {
			t.Fatalf("step %s: leaf %+v %v", id, l, err)
		}
	}
	hr := f.store.Hashes(ctx)
	for size := int64(1); size <= size2; size++ {
		r, err := tlog.TreeHash(size, hr)
		if err != nil {
			t.Fatal(err)
		}
		for leaf := int64(0); leaf < size; leaf++ {
			p, err := tlog.ProveRecord(size, leaf, hr)
			if err != nil || tlog.CheckRecord(p, size, r, leaf, want[leaf]) != nil {
				t.Fatalf("inclusion of %d in %d: %v", leaf, size, err)
			}
		}
		for old := int64(1); old < size; old++ {
			oldRoot, _ := tlog.TreeHash(old, hr)
			p, err := tlog.ProveTree(size, old, hr)
			if err != nil || tlog.CheckTree(p, size, r, old, oldRoot) != nil {
				t.Fatalf("consistency %d→%d: %v", old, size, err)
			}
		}
	}

	// Deleted in SQL: a step of each format, a whole new-format thread.
	f.exec(t, `DELETE FROM thread_activities WHERE id IN (?, ?)`, aSteps[1], aSteps[2])
	st, err := f.queries.VerifyThread.Handle(f.ctx, a)
	if err != nil || st.Verified || st.Code != domain.ChainMissingSteps || len(st.Missing) != 2 ||
		st.Missing[0].StepID != aSteps[1] || st.Missing[1].StepID != aSteps[2] {
		t.Fatalf("old-format steps deleted: %+v %v", st, err)
	}
	f.exec(t, `DELETE FROM thread_activities WHERE id = ?`, bSteps[1])
	st, err = f.queries.VerifyThread.Handle(f.ctx, b)
	if err != nil || st.Verified || st.Code != domain.ChainMissingSteps || len(st.Missing) != 1 || st.Missing[0].StepID != bSteps[1] {
		t.Fatalf("newest step deleted: %+v %v", st, err)
	}
	for _, table := range []string{"step_substeps", "thread_validations", "thread_notifications", "thread_step_states",
		"thread_activities", "thread_refs", "thread_access", "thread_keys", "step_grants", "thread_alerts"} {
		f.exec(t, `DELETE FROM `+table+` WHERE thread_id = ?`, c)
	}
	f.exec(t, `DELETE FROM threads WHERE id = ?`, c)
	st, err = f.queries.VerifyThread.Handle(f.ctx, c)
	if err != nil || st.Verified || st.Code != domain.ChainThreadDeleted || len(st.Missing) != 1 {
		t.Fatalf("thread deleted in SQL: %+v %v", st, err)
	}

	// The newest step of a thread not indexed yet, deleted in SQL.
	th, err := f.threads.Application().Commands.StartThread.Handle(f.ctx, threadsapp.StartThreadInput{Label: "tail"})
	if err != nil {
		t.Fatal(err)
	}
	var tailSteps []string
	for i := 1; i <= 2; i++ {
		r, err := f.threads.Application().Commands.RecordStep.Handle(f.ctx, threadsapp.RecordStepInput{ThreadID: th.ID,
			StepName: "s", Status: "success", IdempotencyKey: fmt.Sprint(i), Context: map[string]string{}})
		if err != nil {
			t.Fatal(err)
		}
		tailSteps = append(tailSteps, r.StepID)
	}
	if l, err := f.store.StepLeaf(ctx, tailSteps[1]); err != nil || l.Leaf.StepID != tailSteps[1] {
		t.Fatalf("a step's leaf not indexed yet: %+v %v", l, err)
	}
	f.exec(t, `DELETE FROM thread_activities WHERE id = ?`, tailSteps[1])
	st, err = f.queries.VerifyThread.Handle(f.ctx, th.ID)
	if err != nil || st.Verified || st.Code != domain.ChainMissingSteps || len(st.Missing) != 1 || st.Missing[0].StepID != tailSteps[1] {
		t.Fatalf("newest step deleted before indexing: %+v %v", st, err)
	}

	// Rolled back: the whole tree as rows again, for the earlier release.
	_, root3 := root(f)
	if r, err := tlog.TreeHash(size2, f.store.Hashes(ctx)); err != nil || r != root2 {
		t.Fatalf("the tree of size %d changed: %v %v", size2, r, err)
	}
	if _, err := db.MigrateDown(ctx, 98); err != nil {
		t.Fatal(err)
	}
	rowsTree(size2+2, root3)
	if _, err := db.MigrateUp(ctx, 0); err != nil {
		t.Fatal(err)
	}
}
