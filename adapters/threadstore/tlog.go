package threadstore

// The transparency log's write side. A step's leaf is queued in its own
// transaction (tlog_pending, part of the step's one statement: no lock and
// no extra round trip on the ingest path), so an acknowledged step's leaf is
// committed with it. The sequencer (FlushLog, run by every replica, one at a
// time under the tlog_state row lock) moves queued leaves into the tree in
// queue order, assigning indexes and writing the tree's stored hashes, and
// deletes them from the queue in the same transaction. Tombstones and the
// backfill append to the tree directly, under the same lock.

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// hashCache keeps stored hashes this process read or wrote. A stored hash
// never changes once written, so a cached one is right whoever wrote it; an
// append usually finds the O(log n) hashes it needs here and reads nothing.
type hashCache struct {
	mu sync.Mutex
	m  map[int64]tlog.Hash
}

// maxCachedHashes bounds the cache; it is emptied when full (the hashes an
// append needs are refilled by one read).
const maxCachedHashes = 1 << 14

func (c *hashCache) get(i int64) (tlog.Hash, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.m[i]
	return h, ok
}

func (c *hashCache) put(idx []int64, hs []tlog.Hash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m)+len(idx) > maxCachedHashes {
		c.m = make(map[int64]tlog.Hash, len(idx))
	}
	for i, x := range idx {
		c.m[x] = hs[i]
	}
}

// hashReader reads stored hashes: first the ones computed in this
// transaction (not committed yet), then the cache, then the database.
type hashReader struct {
	ctx   context.Context
	q     sqlx.QueryerContext
	s     *Store
	fresh map[int64]tlog.Hash
}

func (r *hashReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	var missing []int64
	at := map[int64][]int{}
	for i, x := range indexes {
		if h, ok := r.fresh[x]; ok {
			out[i] = h
			continue
		}
		if h, ok := r.s.hashes.get(x); ok {
			out[i] = h
			continue
		}
		if len(at[x]) == 0 {
			missing = append(missing, x)
		}
		at[x] = append(at[x], i)
	}
	if len(missing) == 0 {
		return out, nil
	}
	found, err := r.s.storedHashes(r.ctx, r.q, missing)
	if err != nil {
		return nil, fmt.Errorf("tlog_hashes: %w", err)
	}
	got := make([]tlog.Hash, 0, len(found))
	idx := make([]int64, 0, len(found))
	for x, b := range found {
		if len(b) != tlog.HashSize {
			return nil, fmt.Errorf("tlog_hashes: hash %d is corrupt", x)
		}
		var h tlog.Hash
		copy(h[:], b)
		for _, i := range at[x] {
			out[i] = h
		}
		delete(at, x)
		got, idx = append(got, h), append(idx, x)
	}
	if len(at) > 0 {
		return nil, fmt.Errorf("tlog_hashes: %d stored hashes missing (the log is damaged)", len(at))
	}
	r.s.hashes.put(idx, got)
	return out, nil
}

// leafIn is a leaf to append: its canonical bytes and the columns the leaf
// row is looked up by (stepID nil for a tombstone).
type leafIn struct {
	kind, threadID string
	stepID         any
	data           []byte
}

func leafOf(l domain.LogLeaf) leafIn {
	in := leafIn{kind: l.Type, threadID: l.ThreadID, data: l.Data()}
	if l.Type == domain.LeafStep {
		in.stepID = l.StepID
	}
	return in
}

func leavesOf(ls []domain.LogLeaf) []leafIn {
	out := make([]leafIn, len(ls))
	for i, l := range ls {
		out[i] = leafOf(l)
	}
	return out
}

// appendLeaves appends leaves to the log inside tx and returns the index of
// the first. It must be the transaction's last write before commit: the
// tlog_state row stays locked until then.
func (s *Store) appendLeaves(ctx context.Context, tx *sqlx.Tx, leaves []leafIn, now time.Time) (int64, error) {
	if len(leaves) == 0 {
		return 0, nil
	}
	k := int64(len(leaves))
	var start int64
	if s.db.Dialect == sqldb.SQLite {
		// No update: the size is the end of the last batch (tlog_sqlite.go).
		if err := s.get(ctx, tx, &start, sizeSQL); err != nil {
			return 0, fmt.Errorf("tlog_state: %w", err)
		}
		return start, s.appendLeavesAt(ctx, tx, leaves, now, start, nil)
	}
	if err := s.get(ctx, tx, &start, `UPDATE tlog_state SET size = size + ? WHERE id = 1 RETURNING size - ?`, k, k); err != nil {
		return 0, fmt.Errorf("tlog_state: %w", err)
	}
	return start, s.appendLeavesAt(ctx, tx, leaves, now, start, nil)
}

// appendLeavesAt writes leaves at indexes start… (the caller holds the
// tlog_state lock and has set or sets the size: extra, written in the same
// statement on PostgreSQL).
func (s *Store) appendLeavesAt(ctx context.Context, tx *sqlx.Tx, leaves []leafIn, now time.Time, start int64, extra []part) error {
	// Hashes an earlier append of this transaction wrote are read from
	// memory: read from the database they would be cached, and wrong if the
	// transaction then rolled back.
	// A leaf completes two stored hashes on average (sized for them: the
	// append runs in every step's transaction on SQLite).
	per := 2*len(leaves) + 8
	r := &hashReader{ctx: ctx, q: tx, s: s, fresh: make(map[int64]tlog.Hash, per)}
	s.pendMu.Lock()
	if p, ok := s.pendHashes[tx]; ok {
		for i, x := range p.idx {
			r.fresh[x] = p.hs[i]
		}
	}
	s.pendMu.Unlock()
	newIdx, newHashes := make([]int64, 0, per), make([]tlog.Hash, 0, per)
	for i, l := range leaves {
		n := start + int64(i)
		hs, err := tlog.StoredHashes(n, l.data, r)
		if err != nil {
			return fmt.Errorf("transparency log: %w", err)
		}
		base := tlog.StoredHashIndex(0, n)
		for j, h := range hs {
			x := base + int64(j)
			r.fresh[x] = h
			newIdx, newHashes = append(newIdx, x), append(newHashes, h)
		}
	}
	var parts []part
	var batch []seenBatch
	if s.db.Dialect == sqldb.Postgres {
		parts = treePartsPostgres(leaves, start, newIdx, newHashes, now)
	} else {
		var err error
		if parts, err = batchParts(leaves, start, newIdx, newHashes, now); err != nil {
			return err
		}
		batch = []seenBatch{batchEntries(leaves, start)}
	}
	if err := s.execParts(ctx, tx, append(parts, extra...)); err != nil {
		return err
	}
	// Cached only now: if the transaction rolls back these indexes are
	// assigned again, and another process may write other hashes there
	// (and another batch at start).
	s.pendingHashes(tx, newIdx, newHashes, batch)
	return nil
}

// treePartsPostgres writes the leaf and hash rows as two statements over
// arrays (unnest), whose text does not depend on how many rows they write:
// one prepared statement serves every flush. Rows spelled out as VALUES
// lists made a new statement text for every count of leaves and hashes, so
// nearly every sequencer flush was parsed and planned afresh, then prepared
// once more for a reuse that rarely came, filling the statement cache
// (docs/contributors/performance.md, "Transparency log").
func treePartsPostgres(leaves []leafIn, start int64, hidx []int64, hashes []tlog.Hash, now time.Time) []part {
	idx := make([]int64, len(leaves))
	kinds := make([]string, len(leaves))
	threads := make([]string, len(leaves))
	steps := make([]sql.NullString, len(leaves))
	data := make([]string, len(leaves))
	for i, l := range leaves {
		idx[i], kinds[i], threads[i], data[i] = start+int64(i), l.kind, l.threadID, string(l.data)
		if id, ok := l.stepID.(string); ok { // nil for a tombstone: NULL
			steps[i] = sql.NullString{String: id, Valid: true}
		}
	}
	hs := make([][]byte, len(hashes))
	for i := range hashes {
		hs[i] = hashes[i][:]
	}
	return []part{
		{q: `INSERT INTO tlog_leaves (idx, kind, thread_id, step_id, data, created_at)
 SELECT u.idx, u.kind, u.thread_id, u.step_id, u.data, CAST(? AS TIMESTAMPTZ)
 FROM unnest(CAST(? AS BIGINT[]), CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS TEXT[]))
 AS u(idx, kind, thread_id, step_id, data)`,
			args: []any{sqldb.Time(now), pq.Array(idx), pq.Array(kinds), pq.Array(threads), pq.Array(steps), pq.Array(data)}},
		{q: `INSERT INTO tlog_hashes (idx, hash) SELECT u.idx, u.hash
 FROM unnest(CAST(? AS BIGINT[]), CAST(? AS BYTEA[])) AS u(idx, hash)`,
			args: []any{pq.Array(hidx), pq.ByteaArray(hs)}},
	}
}

// pendingHashes remembers hashes written in tx, cached once it commits
// (committed reports it; see committedHashes).
func (s *Store) pendingHashes(tx *sqlx.Tx, idx []int64, hs []tlog.Hash, batches []seenBatch) {
	s.pendMu.Lock()
	defer s.pendMu.Unlock()
	if s.pendHashes == nil {
		s.pendHashes = map[*sqlx.Tx]pendingWrite{}
	}
	p := s.pendHashes[tx]
	p.idx, p.hs, p.batches = append(p.idx, idx...), append(p.hs, hs...), append(p.batches, batches...)
	s.pendHashes[tx] = p
}

type pendingWrite struct {
	idx     []int64
	hs      []tlog.Hash
	batches []seenBatch // SQLite: the listing entries of the batches written
}

// settleHashes caches (committed) or drops the hashes tx wrote.
func (s *Store) settleHashes(tx *sqlx.Tx, committed bool) {
	s.pendMu.Lock()
	p, ok := s.pendHashes[tx]
	delete(s.pendHashes, tx)
	s.pendMu.Unlock()
	if ok && committed {
		s.hashes.put(p.idx, p.hs)
		s.rememberBatches(p.batches)
	}
}

// logTx runs fn in a transaction like s.db.Tx and settles the log hashes it
// wrote.
func (s *Store) logTx(ctx context.Context, retry bool, fn func(tx *sqlx.Tx) error) error {
	var last *sqlx.Tx
	run := func(tx *sqlx.Tx) error {
		if last != nil {
			s.settleHashes(last, false) // an attempt that is being retried
		}
		last = tx
		return fn(tx)
	}
	var err error
	if retry {
		err = s.tx(ctx, run)
	} else {
		err = s.db.Tx(ctx, run)
	}
	if last != nil {
		s.settleHashes(last, err == nil)
	}
	return err
}

// pendingParts queue the leaves of the steps plans write.
func pendingParts(plans []ports.StepPlan) []part {
	rows := make([][]any, 0, len(plans))
	for _, p := range plans {
		a := p.Activity
		rows = append(rows, []any{domain.LeafStep, a.ThreadID, a.ID, string(domain.StepLeaf(a.ThreadID, a.ID, a.Seq, a.Hash).Data()),
			sqldb.Time(a.RecordedAt)})
	}
	return rowsParts(`INSERT INTO tlog_pending (kind, thread_id, step_id, data, created_at) VALUES `, `(?,?,?,?,?)`, "", 5, rows)
}

// logInPlace reports whether steps append their leaves to the tree in
// their own transaction instead of queuing them. On SQLite it is so: the
// database has one writer (its IMMEDIATE transaction already excludes every
// other, so reading the size costs no extra wait) and one connection, so a
// separate sequencer transaction per group commit doubled the commits and
// stalled every other query while it ran (docs/contributors/performance.md,
// "Transparency log"); what the step's transaction writes there is one
// tlog_batches row (tlog_sqlite.go). On PostgreSQL the row lock held to the
// commit would serialise the committers of every replica, so steps queue
// their leaves.
func (s *Store) logInPlace() bool { return s.db.Dialect == sqldb.SQLite && !s.queueLeaves }

// appendStepLeaves appends the leaves of the steps plans write to the tree
// inside tx (logInPlace).
func (s *Store) appendStepLeaves(ctx context.Context, tx *sqlx.Tx, plans []ports.StepPlan) error {
	leaves := make([]leafIn, len(plans))
	for i, p := range plans {
		a := p.Activity
		leaves[i] = leafOf(domain.StepLeaf(a.ThreadID, a.ID, a.Seq, a.Hash))
	}
	_, err := s.appendLeaves(ctx, tx, leaves, plans[0].Activity.RecordedAt)
	return err
}

// wakeLog tells the sequencer leaves are queued, or (SQLite, leaves
// appended in place) that batches wait for their thread index
// (tlog_sqlite.go).
func (s *Store) wakeLog() {
	select {
	case s.logWake <- struct{}{}:
	default:
	}
}

// flushBatch is how many queued leaves one sequencer transaction appends.
const flushBatch = 2000

// FlushLog appends every queued leaf to the tree (see the file comment) and
// returns how many it appended.
func (s *Store) FlushLog(ctx context.Context) (int, error) {
	total := 0
	if s.logInPlace() {
		// Only what an earlier release queued: looked for without taking
		// the write lock (every step's commit wakes the sequencer).
		var queued bool
		if err := s.db.GetContext(ctx, &queued, `SELECT EXISTS (SELECT 1 FROM tlog_pending)`); err != nil {
			return 0, sqldb.TranslateError(err)
		}
		if !queued {
			return 0, s.indexLog(ctx)
		}
	}
	for {
		n := 0
		err := s.logTx(ctx, true, func(tx *sqlx.Tx) error {
			n = 0
			var size int64
			q := `SELECT size FROM tlog_state WHERE id = 1` + s.db.ForUpdate()
			if s.db.Dialect == sqldb.SQLite {
				q = sizeSQL
			}
			if err := tx.GetContext(ctx, &size, q); err != nil {
				return err
			}
			// The queued row's bytes and columns are the leaf's as the
			// step's transaction wrote them: appended as they are, not
			// parsed and written again.
			var rows []struct {
				Seq      int64          `db:"seq"`
				Kind     string         `db:"kind"`
				ThreadID string         `db:"thread_id"`
				StepID   sql.NullString `db:"step_id"`
				Data     string         `db:"data"`
			}
			if err := tx.SelectContext(ctx, &rows, s.q(`SELECT seq, kind, thread_id, step_id, data FROM tlog_pending ORDER BY seq LIMIT ?`), flushBatch); err != nil {
				return err
			}
			if len(rows) == 0 {
				return nil
			}
			leaves := make([]leafIn, len(rows))
			seqs := make([]int64, len(rows))
			for i, r := range rows {
				leaves[i], seqs[i] = leafIn{kind: r.Kind, threadID: r.ThreadID, data: []byte(r.Data)}, r.Seq
				if r.StepID.Valid {
					leaves[i].stepID = r.StepID.String
				}
			}
			// The size read under the lock is where they go: the size
			// update and the queue's deletion go in the leaves' statement
			// (one round trip on PostgreSQL). Exactly the rows read are
			// deleted: a row with a lower seq may commit after this read
			// (seq is taken before commit) and is appended next time.
			extra := []part{{q: `UPDATE tlog_state SET size = ? WHERE id = 1`, args: []any{size + int64(len(leaves))}}}
			if s.db.Dialect == sqldb.Postgres {
				// One statement text whatever the count (see treePartsPostgres).
				extra = append(extra, part{q: `DELETE FROM tlog_pending WHERE seq = ANY(CAST(? AS BIGINT[]))`, args: []any{pq.Array(seqs)}})
			} else {
				seqRows := make([][]any, len(seqs))
				for i, q := range seqs {
					seqRows[i] = []any{q}
				}
				extra = append(extra, rowsParts(`DELETE FROM tlog_pending WHERE seq IN (`, `?`, `)`, 1, seqRows)...)
			}
			if err := s.appendLeavesAt(ctx, tx, leaves, time.Now(), size, extra); err != nil {
				return err
			}
			n = len(rows)
			return nil
		})
		if err != nil {
			return total, sqldb.TranslateError(err)
		}
		total += n
		if n > 0 {
			s.logFlushes.Add(1)
		}
		if n < flushBatch {
			// SQLite: list the batches' leaves by thread (tlog_sqlite.go).
			return total, s.indexLog(ctx)
		}
	}
}

// defaultFlushGap is how long the sequencer, woken by a commit, lets further
// commits queue before it flushes: it bounds it to one transaction per gap
// under load. Each sequencer transaction costs about a millisecond of CPU
// (engine and server) whatever it carries, and with a short gap their number
// per step grew as ingest slowed down: 20 ms cost 0.012–0.037 transactions
// per step, 250 ms 0.001–0.005, and the log's CPU per step went from about
// +17 % to about +9 % of ingest (docs/contributors/performance.md,
// "Transparency log"). Nothing waits on it: proofs, exports and checkpoint
// signing flush first, and the signer flushes every checkpoint interval.
const defaultFlushGap = 250 * time.Millisecond

// RunLogSequencer flushes the queue after local commits (woken) and every
// interval (leaves other replicas queued, if their sequencer is slower),
// until ctx ends; then once more.
func (s *Store) RunLogSequencer(ctx context.Context, interval time.Duration, logErr func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := s.FlushLog(ctx); err != nil && ctx.Err() == nil {
			logErr(err)
		}
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if _, err := s.FlushLog(fctx); err != nil {
				logErr(err)
			}
			cancel()
			return
		case <-s.logWake:
			// Let the commits of the next moment queue too: one
			// sequencer transaction then carries many group commits'
			// leaves instead of one each (its cost is per transaction).
			if s.logFlushGap > 0 {
				select {
				case <-time.After(s.logFlushGap):
				case <-ctx.Done():
				}
			}
		case <-t.C:
		}
	}
}

// AppendTombstones appends one tombstone leaf per deleted thread inside tx
// (the deleting transaction). Every path that deletes threads calls it:
// DeleteThreads (erasure, retention), and any later bulk path (dropping a
// retention partition) must call it in the transaction that deletes.
func (s *Store) AppendTombstones(ctx context.Context, tx *sqlx.Tx, threads []domain.Thread, reason string, now time.Time) error {
	leaves := make([]domain.LogLeaf, 0, len(threads))
	for _, t := range threads {
		leaves = append(leaves, domain.Tombstone(t, reason, now))
	}
	_, err := s.appendLeaves(ctx, tx, leavesOf(leaves), now)
	return err
}

// backfillBatch is how many older steps one backfill transaction appends.
const backfillBatch = 500

// BackfillLog appends a leaf for every step recorded before the log existed
// (in step id order, a batch per transaction, the log locked first so
// replicas doing the same never append one step twice), then marks the log
// backfilled: from then on a stored step without a leaf was not written by
// this release (CatchUpLog appends those a release older than the log
// wrote). It returns how many leaves it appended.
func (s *Store) BackfillLog(ctx context.Context) (int, error) {
	total, after := 0, ""
	for {
		done, next, n := false, after, 0
		err := s.logTx(ctx, true, func(tx *sqlx.Tx) error {
			done, next, n = false, after, 0
			var flag int
			if err := tx.GetContext(ctx, &flag, `SELECT backfilled FROM tlog_state WHERE id = 1`+s.db.ForUpdate()); err != nil {
				return err
			}
			if flag != 0 {
				done = true
				return nil
			}
			if s.db.Dialect == sqldb.SQLite {
				// The steps' leaves not indexed by thread yet are found too.
				if err := s.indexAll(ctx, tx); err != nil {
					return err
				}
			}
			var ids []string
			if err := tx.SelectContext(ctx, &ids, s.q(`SELECT a.id FROM thread_activities a
 WHERE a.id > ?`+s.noLeafSQL()+` ORDER BY a.id LIMIT ?`), after, backfillBatch); err != nil {
				return err
			}
			if len(ids) == 0 {
				done = true
				_, err := tx.ExecContext(ctx, `UPDATE tlog_state SET backfilled = 1 WHERE id = 1`)
				return err
			}
			acts, err := s.activitiesByID(ctx, tx, ids)
			if err != nil {
				return err
			}
			leaves := make([]domain.LogLeaf, len(acts))
			for i, a := range acts {
				leaves[i] = legacyLeaf(a.ThreadID, a.ID, a.Seq, a.Hash, a.Record())
			}
			next, n = ids[len(ids)-1], len(ids)
			_, err = s.appendLeaves(ctx, tx, leavesOf(leaves), time.Now())
			return err
		})
		if err != nil {
			return total, sqldb.TranslateError(err)
		}
		after, total = next, total+n
		if done {
			return total, nil
		}
	}
}

// activitiesByID reads attempts (with their sub-steps) by id, in id order.
func (s *Store) activitiesByID(ctx context.Context, tx *sqlx.Tx, ids []string) ([]ports.Activity, error) {
	q, args, err := sqlx.In(`SELECT id, thread_id, seq, step_name, idempotency_key, status, attempt, actor,
 actor_service, CAST(context AS TEXT) AS context, CAST(metadata AS TEXT) AS metadata, started_at, finished_at,
 recorded_at, hash, prev_hash FROM thread_activities WHERE id IN (?) ORDER BY id`, ids)
	if err != nil {
		return nil, err
	}
	var rows []activityRow
	if err := tx.SelectContext(ctx, &rows, s.q(q), args...); err != nil {
		return nil, err
	}
	out := make([]ports.Activity, len(rows))
	at := make(map[string]int, len(rows))
	for i, r := range rows {
		out[i], at[r.ID] = r.activity(), i
	}
	q, args, err = sqlx.In(`SELECT id, step_id, name, status, CAST(payload AS TEXT) AS payload, recorded_at
 FROM step_substeps WHERE step_id IN (?) ORDER BY position, recorded_at, id`, ids)
	if err != nil {
		return nil, err
	}
	var subs []subStepRow
	if err := tx.SelectContext(ctx, &subs, s.q(q), args...); err != nil {
		return nil, err
	}
	for _, r := range subs {
		if i, ok := at[r.StepID]; ok {
			out[i].SubSteps = append(out[i].SubSteps, r.subStep())
		}
	}
	return out, nil
}
