package threadstore_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/readmodel"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
)

// logFixture is a store with the write and read use cases over it.
type logFixture struct {
	db      *sqldb.DB
	store   *threadstore.Store
	threads *threadsapp.Module
	queries *readmodel.Queries
	ctx     context.Context
}

func newLogFixture(t *testing.T, d sqldb.Dialect) *logFixture {
	t.Helper()
	return newLogFixtureOn(t, sqldbtest.Open(t, d))
}

// newLogFixtureOn is newLogFixture on an open database (a new store: what
// an engine restarted on it has).
func newLogFixtureOn(t *testing.T, db *sqldb.DB) *logFixture {
	t.Helper()
	f := &logFixture{db: db, store: threadstore.New(db)}
	keys, err := threadstore.LoadChainKeys(context.Background(), db, threadstore.KeyConfig{}, t.TempDir(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	f.threads = threadsapp.New(f.store, nil, nil, nil, nil)
	f.threads.UseChainKeys(keys)
	f.useKeys(keys)
	f.ctx = authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleAdmin})
	return f
}

// useKeys is what an engine started with keys verifies with.
func (f *logFixture) useKeys(keys domain.ChainKeys) {
	tq := threadquery.New(f.db)
	f.queries = readmodel.New(readmodel.Deps{Store: tq, ChainSecrets: keys.Secrets, ChainPartialBefore: keys.PartialBefore, Log: f.store})
}

// thread starts a thread and records n steps in it (one with sub-steps).
func (f *logFixture) thread(t *testing.T, n int) (string, []string) {
	t.Helper()
	th, err := f.threads.Application().Commands.StartThread.Handle(f.ctx, threadsapp.StartThreadInput{Label: "log"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := 1; i <= n; i++ {
		in := threadsapp.RecordStepInput{ThreadID: th.ID, StepName: fmt.Sprint("s", i), Status: "success",
			IdempotencyKey: fmt.Sprint("k", i), Context: map[string]string{"i": fmt.Sprint(i)},
			Metadata: map[string]any{"small": 1e-7, "html": "<x>&", "n": float64(i)}}
		if i == 1 {
			in.SubSteps = []threadsapp.SubStepInput{{Name: "a", Status: "success", Payload: map[string]any{"z": 1.5}}, {Name: "b", Status: "success"}}
		}
		r, err := f.threads.Application().Commands.RecordStep.Handle(f.ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.StepID)
	}
	// What the engine's sequencer does after the commits.
	if _, err := f.store.FlushLog(f.ctx); err != nil {
		t.Fatal(err)
	}
	return th.ID, ids
}

func (f *logFixture) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	if _, err := f.db.Exec(f.db.Rebind(q), args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// A thread written now verifies (chain version 2, head, log), on both stores.
func TestVerifiedAgainstTheLog(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		f := newLogFixture(t, d)
		id, _ := f.thread(t, 4)
		st, err := f.queries.VerifyThread.Handle(f.ctx, id)
		if err != nil || !st.Verified || st.Code != domain.ChainVerified || st.Log == nil || st.Log.Leaves != 4 || st.Log.Unlogged != 0 {
			t.Fatalf("status %+v %v (log %+v)", st, err, st.Log)
		}
		var hash string
		if err := f.db.Get(&hash, f.db.Rebind(`SELECT last_hash FROM threads WHERE id = ?`), id); err != nil || !domain.IsStepHash(hash) {
			t.Fatalf("new steps are chain version 2: %q %v", hash, err)
		}
	})
}

// Defect 1 of issue 27: deleting the newest step, a middle step or a whole
// thread in SQL is detected and named (it used to verify, one step fewer).
func TestDeletedStepsAreDetectedAndNamed(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		f := newLogFixture(t, d)
		t.Run("newest step", func(t *testing.T) {
			id, steps := f.thread(t, 3)
			f.exec(t, `DELETE FROM thread_activities WHERE id = ?`, steps[2])
			st, err := f.queries.VerifyThread.Handle(f.ctx, id)
			if err != nil || st.Verified || st.Code != domain.ChainMissingSteps || len(st.Missing) != 1 ||
				st.Missing[0].StepID != steps[2] || st.Missing[0].Seq != 3 || st.Missing[0].LogIndex < 0 ||
				!strings.Contains(st.Error, steps[2]) {
				t.Fatalf("newest step deleted: %+v %v", st, err)
			}
			// Without the log, the head alone still catches it.
			headOnly := readmodel.New(readmodel.Deps{Store: threadquery.New(f.db)})
			st, err = headOnly.VerifyThread.Handle(f.ctx, id)
			if err != nil || st.Verified || st.Code != domain.ChainTruncated || !strings.Contains(st.Error, "records 3 steps") {
				t.Fatalf("newest step deleted, no log: %+v %v", st, err)
			}
		})
		t.Run("middle step", func(t *testing.T) {
			id, steps := f.thread(t, 3)
			f.exec(t, `DELETE FROM thread_activities WHERE id = ?`, steps[1])
			st, err := f.queries.VerifyThread.Handle(f.ctx, id)
			if err != nil || st.Verified || st.Code != domain.ChainMissingSteps || len(st.Missing) != 1 || st.Missing[0].StepID != steps[1] {
				t.Fatalf("middle step deleted: %+v %v", st, err)
			}
		})
		t.Run("edited step", func(t *testing.T) {
			id, steps := f.thread(t, 2)
			f.exec(t, `UPDATE thread_activities SET status = 'failed' WHERE id = ?`, steps[1])
			st, err := f.queries.VerifyThread.Handle(f.ctx, id)
			if err != nil || st.Verified || st.Code != domain.ChainTampered || st.BrokenStepID != steps[1] {
				t.Fatalf("edited step: %+v %v", st, err)
			}
		})
		t.Run("inserted step", func(t *testing.T) {
			id, _ := f.thread(t, 1)
			if _, err := f.store.BackfillLog(f.ctx); err != nil {
				t.Fatal(err)
			}
			// A forged step chained correctly, but written behind the engine's back.
			var last string
			if err := f.db.Get(&last, f.db.Rebind(`SELECT last_hash FROM threads WHERE id = ?`), id); err != nil {
				t.Fatal(err)
			}
			rec := domain.StepRecord{ThreadID: id, StepID: "forged", Seq: 2, StepName: "refund", IdempotencyKey: "x", Status: "success",
				Attempt: 1, RecordedAt: time.Now(), PrevHash: last}
			h, _ := domain.StepHash(rec)
			f.exec(t, `INSERT INTO thread_activities (id, thread_id, seq, step_name, idempotency_key, status, attempt, context, metadata,
 recorded_at, content_hash, hash, prev_hash) VALUES ('forged', ?, 2, 'refund', 'x', 'success', 1, '{}', '{}', ?, '', ?, ?)`,
				id, sqldb.Time(rec.RecordedAt), h, last)
			f.exec(t, `UPDATE threads SET step_count = 2, last_hash = ? WHERE id = ?`, h, id)
			st, err := f.queries.VerifyThread.Handle(f.ctx, id)
			if err != nil || st.Verified || st.Code != domain.ChainNotInLog || st.BrokenStepID != "forged" {
				t.Fatalf("inserted step: %+v %v", st, err)
			}
		})
		t.Run("whole thread", func(t *testing.T) {
			id, steps := f.thread(t, 2)
			for _, table := range []string{"step_substeps", "thread_validations", "thread_notifications", "thread_step_states",
				"thread_activities", "thread_refs", "thread_access", "thread_keys", "step_grants", "thread_alerts"} {
				f.exec(t, `DELETE FROM `+table+` WHERE thread_id = ?`, id)
			}
			f.exec(t, `DELETE FROM threads WHERE id = ?`, id)
			st, err := f.queries.VerifyThread.Handle(f.ctx, id)
			if err != nil || st.Verified || st.Code != domain.ChainThreadDeleted || len(st.Missing) != 2 ||
				!strings.Contains(st.Error, steps[0]) || !strings.Contains(st.Error, "no tombstone") {
				t.Fatalf("thread deleted in SQL: %+v %v", st, err)
			}
		})
		t.Run("documented deletion", func(t *testing.T) {
			id, _ := f.thread(t, 2)
			if _, err := f.store.DeleteThreads(f.ctx, []string{id}); err != nil {
				t.Fatal(err)
			}
			if _, err := f.queries.VerifyThread.Handle(f.ctx, id); domain.KindOf(err) != domain.KindNotFound {
				t.Fatalf("deleted through the store: %v, want not found", err)
			}
			if _, err := f.store.FlushLog(f.ctx); err != nil {
				t.Fatal(err)
			}
			leaves, err := f.store.ThreadLeaves(f.ctx, []string{id})
			if err != nil {
				t.Fatal(err)
			}
			ls := leaves[id]
			var tomb []domain.LogLeaf
			for _, l := range ls {
				if l.Index < 0 {
					t.Fatalf("leaf still queued after a flush: %+v", l)
				}
				if l.Leaf.Type == domain.LeafThreadDeleted {
					tomb = append(tomb, l.Leaf)
				}
			}
			if len(ls) != 3 || len(tomb) != 1 || tomb[0].StepCount != 2 || tomb[0].Reason != domain.DeletedByOperator {
				t.Fatalf("leaves after deletion: %+v", ls)
			}
		})
	})
}

// Defect 2 of issue 27: a database written by a release that kept the
// hash-chain key in each replica's data directory, opened by an engine with
// an empty data directory, reports those chains as unknown_key, never as
// tampering; the old key file, when a replica has it, is imported and they
// verify again.
func TestLostKeyFileIsUnknownKeyNotTampering(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		f := newLogFixture(t, d)
		id, _ := f.thread(t, 3)
		// What the earlier release left: HMAC chains with the replica's own
		// key (in its data directory), no installation_keys, no log.
		old := []byte("per-replica-key-0123456789abcdef")
		oldDir := t.TempDir()
		if err := os.WriteFile(filepath.Join(oldDir, threadstore.HashChainKeyFile), []byte(hex.EncodeToString(old)), 0o600); err != nil {
			t.Fatal(err)
		}
		acts, err := f.store.ListActivities(f.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		prev := ""
		past := time.Now().Add(-48 * time.Hour)
		for i, a := range acts {
			a.RecordedAt = past.Add(time.Duration(i) * time.Minute)
			l := a.ChainLink()
			l.PrevHash = prev
			h := domain.ChainHash(old, "1", l)
			f.exec(t, `UPDATE thread_activities SET hash = ?, prev_hash = ?, recorded_at = ? WHERE id = ?`, h, prev, sqldb.Time(a.RecordedAt), a.ID)
			prev = h
		}
		f.exec(t, `UPDATE threads SET last_hash = ? WHERE id = ?`, prev, id)
		tables := []string{"installation_keys", "tlog_leaves", "tlog_hashes", "tlog_checkpoints", "tlog_pending"}
		if d == sqldb.SQLite { // tlog_leaves is a view over these (migration 00099)
			tables = append(tables[2:], "installation_keys", "tlog_leaves_v1", "tlog_batches", "tlog_thread_leaves")
		}
		for _, table := range tables {
			f.exec(t, `DELETE FROM `+table)
		}
		f.exec(t, `UPDATE tlog_state SET size = 0, backfilled = 0`)
		if d == sqldb.SQLite {
			f.exec(t, `UPDATE tlog_state SET indexed_to = 0`)
		}

		// A replica starts in an empty data directory.
		keys, err := threadstore.LoadChainKeys(f.ctx, f.db, threadstore.KeyConfig{}, t.TempDir(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.store.BackfillLog(f.ctx); err != nil {
			t.Fatal(err)
		}
		f.useKeys(keys)
		st, err := f.queries.VerifyThread.Handle(f.ctx, id)
		if err != nil || st.Verified || st.Code != domain.ChainUnknownKey || strings.Contains(strings.ToLower(st.Error), "tamper") {
			t.Fatalf("empty data directory: %+v %v", st, err)
		}
		// The replica that has the old key file starts: the key is imported
		// into the database and every replica verifies the chains.
		if _, err := threadstore.LoadChainKeys(f.ctx, f.db, threadstore.KeyConfig{}, oldDir, time.Now()); err != nil {
			t.Fatal(err)
		}
		keys, err = threadstore.LoadChainKeys(f.ctx, f.db, threadstore.KeyConfig{}, t.TempDir(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		f.useKeys(keys)
		if st, err := f.queries.VerifyThread.Handle(f.ctx, id); err != nil || !st.Verified {
			t.Fatalf("after the key file was imported: %+v %v", st, err)
		}
		// A link changed after the upgrade is caught by the log (it holds the
		// record's hash since the upgrade), whatever the keys.
		f.exec(t, `UPDATE thread_activities SET step_name = 'renamed' WHERE thread_id = ? AND seq = 2`, id)
		if st, err := f.queries.VerifyThread.Handle(f.ctx, id); err != nil || st.Code != domain.ChainLogMismatch ||
			!strings.Contains(st.Error, "changed since the transparency log recorded it") {
			t.Fatalf("edited after the upgrade: %+v %v", st, err)
		}
	})
}

// Keys sealed at rest: with a keys encryption key every secret is stored
// encrypted (existing clear ones are sealed at start), an engine without
// the key refuses to start, and one with it loads the same keys.
func TestKeysSealedAtRest(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		ctx, now := context.Background(), time.Now()
		clear, err := threadstore.LoadChainKeys(ctx, db, threadstore.KeyConfig{}, t.TempDir(), now)
		if err != nil {
			t.Fatal(err)
		}
		sealer, err := threadstore.NewSealer(strings.Repeat("ab", 32))
		if err != nil {
			t.Fatal(err)
		}
		sealed, err := threadstore.LoadChainKeys(ctx, db, threadstore.KeyConfig{Sealer: sealer}, t.TempDir(), now)
		if err != nil || string(sealed.Secrets["1"]) != string(clear.Secrets["1"]) {
			t.Fatalf("sealed keys %v", err)
		}
		lk, err := threadstore.LoadLogKeys(ctx, db, "example.com/log", sealer, now)
		if err != nil || lk.Origin != "example.com/log" || len(lk.Verifiers) != 1 || !strings.HasPrefix(lk.Verifiers[0], "example.com/log+") {
			t.Fatalf("log keys %+v %v", lk, err)
		}
		var stored []string
		if err := db.Select(&stored, `SELECT secret FROM installation_keys WHERE secret IS NOT NULL`); err != nil {
			t.Fatal(err)
		}
		for _, s := range stored {
			if !strings.HasPrefix(s, "aesgcm:") || strings.Contains(s, hex.EncodeToString(clear.Secrets["1"])) {
				t.Fatalf("a key is stored in clear: %q", s)
			}
		}
		if _, err := threadstore.LoadChainKeys(ctx, db, threadstore.KeyConfig{}, t.TempDir(), now); err == nil ||
			!strings.Contains(err.Error(), "keys_encryption_key") {
			t.Fatalf("no encryption key: %v", err)
		}
		other, _ := threadstore.NewSealer(strings.Repeat("cd", 32))
		if _, err := threadstore.LoadLogKeys(ctx, db, "", other, now); err == nil {
			t.Fatal("another encryption key opened the log key")
		}
		if _, err := threadstore.LoadLogKeys(ctx, db, "other.example/log", sealer, now); err == nil {
			t.Fatal("a different origin was accepted")
		}
		v, err := threadstore.RotateLogKey(ctx, db, sealer, now)
		lk2, err2 := threadstore.LoadLogKeys(ctx, db, "", sealer, now)
		if err != nil || err2 != nil || v != "2" || lk2.Version != "2" || len(lk2.Verifiers) != 2 || lk2.Verifiers[1] != lk.Verifiers[0] {
			t.Fatalf("rotation %q %v %+v %v", v, err, lk2, err2)
		}
	})
}

// Property test of the log on both stores: after random batches of appends
// (and a backfill), the stored tree equals one computed in memory, every
// inclusion and consistency proof verifies, and a flipped byte fails.
func TestLogProofsProperty(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		f := newLogFixture(t, d)
		var want []tlog.Hash // leaf hashes in log order, read back below
		for i := 0; i < 6; i++ {
			f.thread(t, 1+i%4)
		}
		st, err := f.store.LogState(f.ctx)
		if err != nil || st.Size != 1+2+3+4+1+2 {
			t.Fatalf("log state %+v %v", st, err)
		}
		ids := []string{}
		if err := f.db.Select(&ids, `SELECT DISTINCT thread_id FROM tlog_leaves`); err != nil {
			t.Fatal(err)
		}
		leaves, err := f.store.ThreadLeaves(f.ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		want = make([]tlog.Hash, st.Size)
		for _, ls := range leaves {
			for _, l := range ls {
				want[l.Index] = domain.LeafHash(l.Data)
				if l.Stored != want[l.Index] {
					t.Fatalf("leaf %d: stored hash differs from its data", l.Index)
				}
			}
		}
		// The tree in memory.
		var mem []tlog.Hash
		memReader := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
			out := make([]tlog.Hash, len(idx))
			for i, x := range idx {
				out[i] = mem[x]
			}
			return out, nil
		})
		for n, h := range want {
			hs, err := tlog.StoredHashesForRecordHash(int64(n), h, memReader)
			if err != nil {
				t.Fatal(err)
			}
			mem = append(mem, hs...)
		}
		hr := f.store.Hashes(f.ctx)
		for size := int64(1); size <= st.Size; size++ {
			root, err := tlog.TreeHash(size, hr)
			memRoot, _ := tlog.TreeHash(size, memReader)
			if err != nil || root != memRoot {
				t.Fatalf("tree of size %d: %v %v", size, root, err)
			}
			for leaf := int64(0); leaf < size; leaf++ {
				p, err := tlog.ProveRecord(size, leaf, hr)
				if err != nil || tlog.CheckRecord(p, size, root, leaf, want[leaf]) != nil {
					t.Fatalf("inclusion of %d in %d: %v", leaf, size, err)
				}
				if len(p) > 0 {
					bad := append(tlog.RecordProof(nil), p...)
					bad[int(leaf)%len(bad)][int(size)%tlog.HashSize] ^= 1
					if tlog.CheckRecord(bad, size, root, leaf, want[leaf]) == nil {
						t.Fatalf("flipped proof byte verifies (%d in %d)", leaf, size)
					}
				}
				flipped := want[leaf]
				flipped[int(leaf)%tlog.HashSize] ^= 0x80
				if tlog.CheckRecord(p, size, root, leaf, flipped) == nil {
					t.Fatalf("flipped leaf verifies (%d in %d)", leaf, size)
				}
			}
			for old := int64(1); old <= size; old++ {
				oldRoot, _ := tlog.TreeHash(old, hr)
				p, err := tlog.ProveTree(size, old, hr)
				if err != nil || tlog.CheckTree(p, size, root, old, oldRoot) != nil {
					t.Fatalf("consistency %d→%d: %v", old, size, err)
				}
				if len(p) > 0 {
					bad := append(tlog.TreeProof(nil), p...)
					bad[0][0] ^= 1
					if tlog.CheckTree(bad, size, root, old, oldRoot) == nil {
						t.Fatalf("flipped consistency proof verifies (%d→%d)", old, size)
					}
				}
			}
		}
	})
}

// A step's leaf is queued in the step's transaction and reaches the tree
// when the sequencer flushes; a rolled-back batch queues nothing; two
// sequencers at once append each leaf once.
func TestQueuedLeavesReachTheTreeOnce(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		f := newLogFixture(t, d)
		f.store.QueueLeavesForTest() // the outbox, also on SQLite
		th, err := f.threads.Application().Commands.StartThread.Handle(f.ctx, threadsapp.StartThreadInput{Label: "q"})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 40; i++ {
			if _, err := f.threads.Application().Commands.RecordStep.Handle(f.ctx, threadsapp.RecordStepInput{ThreadID: th.ID,
				StepName: "s", Status: "success", IdempotencyKey: fmt.Sprint(i), Context: map[string]string{}}); err != nil {
				t.Fatal(err)
			}
		}
		var queued int
		if err := f.db.Get(&queued, `SELECT COUNT(*) FROM tlog_pending`); err != nil || queued != 40 {
			t.Fatalf("queued %d %v", queued, err)
		}
		// Queued leaves already count for verification.
		if st, err := f.queries.VerifyThread.Handle(f.ctx, th.ID); err != nil || !st.Verified || st.Log.Leaves != 40 {
			t.Fatalf("verify with queued leaves: %+v %v", st, err)
		}
		done := make(chan int, 2)
		for i := 0; i < 2; i++ {
			go func() {
				n, err := f.store.FlushLog(f.ctx)
				if err != nil {
					t.Error(err)
				}
				done <- n
			}()
		}
		if a, b := <-done, <-done; a+b != 40 {
			t.Fatalf("two sequencers appended %d and %d leaves, want 40 in all", a, b)
		}
		st, err := f.store.LogState(f.ctx)
		if err != nil || st.Size != 40 {
			t.Fatalf("log %+v %v", st, err)
		}
		if err := f.db.Get(&queued, `SELECT COUNT(*) FROM tlog_pending`); err != nil || queued != 0 {
			t.Fatalf("still queued %d %v", queued, err)
		}
	})
}

// A flush that commits while ThreadLeaves reads (after the queue, before the
// tree) neither hides a leaf nor shows it twice: verification would report a
// hidden one as a step written behind the engine's back (not_in_log).
func TestThreadLeavesDuringAFlush(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		f := newLogFixture(t, d)
		f.store.QueueLeavesForTest() // the outbox, also on SQLite
		th, err := f.threads.Application().Commands.StartThread.Handle(f.ctx, threadsapp.StartThreadInput{Label: "race"})
		if err != nil {
			t.Fatal(err)
		}
		r, err := f.threads.Application().Commands.RecordStep.Handle(f.ctx, threadsapp.RecordStepInput{ThreadID: th.ID,
			StepName: "s", Status: "success", IdempotencyKey: "1", Context: map[string]string{}})
		if err != nil {
			t.Fatal(err)
		}
		flushed := 0
		f.store.AfterQueueRead(func() {
			if flushed, err = f.store.FlushLog(f.ctx); err != nil {
				t.Error(err)
			}
		})
		leaves, err := f.store.ThreadLeaves(f.ctx, []string{th.ID})
		if err != nil || flushed != 1 {
			t.Fatalf("leaves %v, flushed %d", err, flushed)
		}
		if ls := leaves[th.ID]; len(ls) != 1 || ls[0].Leaf.StepID != r.StepID || ls[0].Index != 0 {
			t.Fatalf("leaves read across a flush: %+v", ls)
		}
	})
}

// On SQLite a step's leaf is appended to the tree in the step's own
// transaction (one writer: no separate sequencer transaction), so nothing is
// queued and the log holds every committed step at once; a batch that rolls
// back appends nothing and leaves no cached hash behind.
func TestSQLiteAppendsLeavesInPlace(t *testing.T) {
	t.Parallel()
	f := newLogFixture(t, sqldb.SQLite)
	th, err := f.threads.Application().Commands.StartThread.Handle(f.ctx, threadsapp.StartThreadInput{Label: "in place"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := f.threads.Application().Commands.RecordStep.Handle(f.ctx, threadsapp.RecordStepInput{ThreadID: th.ID,
				StepName: "s", Status: "success", IdempotencyKey: fmt.Sprint(i), Context: map[string]string{}}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var queued int
	if err := f.db.Get(&queued, `SELECT COUNT(*) FROM tlog_pending`); err != nil || queued != 0 {
		t.Fatalf("queued %d %v", queued, err)
	}
	if st, err := f.store.LogState(f.ctx); err != nil || st.Size != 40 {
		t.Fatalf("log %+v %v", st, err)
	}
	if st, err := f.queries.VerifyThread.Handle(f.ctx, th.ID); err != nil || !st.Verified || st.Log.Leaves != 40 {
		t.Fatalf("verify: %+v %v", st, err)
	}
	// Every stored hash written matches the tree recomputed from the leaves.
	leaves, err := f.store.ThreadLeaves(f.ctx, []string{th.ID})
	if err != nil || len(leaves[th.ID]) != 40 {
		t.Fatalf("leaves %d %v", len(leaves[th.ID]), err)
	}
	var hs []tlog.Hash
	for i, l := range leaves[th.ID] {
		if l.Index != int64(i) {
			t.Fatalf("leaf %d at index %d", i, l.Index)
		}
		hs = append(hs, tlog.RecordHash(l.Leaf.Data()))
	}
	want := treeHash(hs)
	got, err := tlog.TreeHash(40, f.store.Hashes(f.ctx))
	if err != nil || got != want {
		t.Fatalf("tree hash %v %v, want %v", got, err, want)
	}
}

// treeHash is RFC 6962's tree hash of leaf hashes, computed directly.
func treeHash(hs []tlog.Hash) tlog.Hash {
	if len(hs) == 1 {
		return hs[0]
	}
	k := 1
	for k*2 < len(hs) {
		k *= 2
	}
	return tlog.NodeHash(treeHash(hs[:k]), treeHash(hs[k:]))
}

// Sequencer flushes of different sizes use one statement text to write the
// tree (on PostgreSQL: arrays, not a VALUES list per count of rows), so the
// statement cache holds one tree-writing statement, not one per flush size
// (each new text was parsed and planned, then prepared for a reuse that
// rarely came; docs/contributors/performance.md, "Transparency log"). The
// rows written are the same: tombstones keep a NULL step_id.
func TestFlushesOfAnySizeShareOneStatement(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		f := newLogFixture(t, d)
		f.store.QueueLeavesForTest() // the outbox, also on SQLite
		th, err := f.threads.Application().Commands.StartThread.Handle(f.ctx, threadsapp.StartThreadInput{Label: "sizes"})
		if err != nil {
			t.Fatal(err)
		}
		steps := 0
		for k := 1; k <= 8; k++ {
			for i := 0; i < k; i++ {
				steps++
				if _, err := f.threads.Application().Commands.RecordStep.Handle(f.ctx, threadsapp.RecordStepInput{ThreadID: th.ID,
					StepName: "s", Status: "success", IdempotencyKey: fmt.Sprint(steps), Context: map[string]string{}}); err != nil {
					t.Fatal(err)
				}
			}
			if n, err := f.store.FlushLog(f.ctx); err != nil || n != k {
				t.Fatalf("flush of %d: %d %v", k, n, err)
			}
		}
		if d == sqldb.Postgres {
			if n := f.store.CachedStatementsContaining("INSERT INTO tlog_leaves"); n != 1 {
				t.Fatalf("%d cached statements write tlog_leaves after flushes of 8 sizes, want 1", n)
			}
		}
		gone, _ := f.thread(t, 1)
		gone2, _ := f.thread(t, 1)
		if _, err := f.store.FlushLog(f.ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := f.store.DeleteThreads(f.ctx, []string{gone, gone2}); err != nil {
			t.Fatal(err)
		}
		var tomb, stepLeaves int
		if err := f.db.Get(&tomb, `SELECT COUNT(*) FROM tlog_leaves WHERE kind = 'thread_deleted' AND step_id IS NULL`); err != nil || tomb != 2 {
			t.Fatalf("tombstones with a NULL step_id: %d %v", tomb, err)
		}
		if err := f.db.Get(&stepLeaves, `SELECT COUNT(*) FROM tlog_leaves l JOIN thread_activities a ON a.id = l.step_id AND a.thread_id = l.thread_id`); err != nil || stepLeaves != steps {
			t.Fatalf("step leaves naming their step and thread: %d of %d %v", stepLeaves, steps, err)
		}
		if st, err := f.queries.VerifyThread.Handle(f.ctx, th.ID); err != nil || !st.Verified || st.Log.Leaves != steps {
			t.Fatalf("verify: %+v %v", st, err)
		}
	})
}
