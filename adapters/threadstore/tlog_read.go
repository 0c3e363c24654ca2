package threadstore

// The transparency log's read side and its checkpoints (ports.TransparencyLog).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/jmoiron/sqlx"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

var _ ports.TransparencyLog = (*Store)(nil)

// LogState: see ports.TransparencyLog.
func (s *Store) LogState(ctx context.Context) (ports.LogState, error) {
	var r struct {
		Size       int64 `db:"size"`
		Backfilled int   `db:"backfilled"`
	}
	q := `SELECT size, backfilled FROM tlog_state WHERE id = 1`
	if s.db.Dialect == sqldb.SQLite {
		q = `SELECT (` + sizeSQL + `) AS size, backfilled FROM tlog_state WHERE id = 1`
	}
	err := s.db.GetContext(ctx, &r, q)
	return ports.LogState{Size: r.Size, Backfilled: r.Backfilled != 0}, sqldb.TranslateError(err)
}

type leafRow struct {
	Idx      int64  `db:"idx"`
	ThreadID string `db:"thread_id"`
	Data     string `db:"data"`
	Stored   []byte `db:"hash"`
}

func (r leafRow) record() (ports.LogLeafRecord, error) {
	l, err := domain.ParseLogLeaf([]byte(r.Data))
	if err != nil {
		// An edited leaf row: keep what the row says so the check names it.
		l = domain.LogLeaf{Type: domain.LeafStep, ThreadID: r.ThreadID}
	}
	out := ports.LogLeafRecord{Index: r.Idx, Leaf: l, Data: []byte(r.Data)}
	if len(r.Stored) == tlog.HashSize {
		copy(out.Stored[:], r.Stored)
	}
	return out, nil
}

// leaves reads the leaves matching where (sqlx.In arguments) in log order,
// each with the leaf hash the tree stores for it.
func (s *Store) leaves(ctx context.Context, where string, args ...any) ([]ports.LogLeafRecord, error) {
	var rows []leafRow
	q, qargs, err := sqlx.In(`SELECT idx, thread_id, data FROM `+s.leafTable()+` WHERE `+where+` ORDER BY idx`, args...)
	if err != nil {
		return nil, err
	}
	if err := s.db.SelectContext(ctx, &rows, s.q(q), qargs...); err != nil {
		return nil, sqldb.TranslateError(err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	idx := make([]int64, len(rows))
	for i, r := range rows {
		idx[i] = tlog.StoredHashIndex(0, r.Idx)
	}
	hs, err := s.readStored(ctx, idx)
	if err != nil {
		return nil, err
	}
	out := make([]ports.LogLeafRecord, 0, len(rows))
	for i, r := range rows {
		r.Stored = hs[idx[i]]
		rec, _ := r.record()
		out = append(out, rec)
	}
	return out, nil
}

// readStored reads stored hashes by index; a missing one is nil.
func (s *Store) readStored(ctx context.Context, idx []int64) (map[int64][]byte, error) {
	out := make(map[int64][]byte, len(idx))
	for len(idx) > 0 {
		n := min(len(idx), 1000)
		found, err := s.storedHashes(ctx, s.db, idx[:n])
		if err != nil {
			return nil, sqldb.TranslateError(err)
		}
		maps.Copy(out, found)
		idx = idx[n:]
	}
	return out, nil
}

// storedHashes reads stored hashes by index through q: from tlog_hashes
// and, on SQLite, from the batches (tlog_sqlite.go) for those it does not
// hold. A hash found nowhere is absent from the map; a hash's length is the
// caller's to check.
func (s *Store) storedHashes(ctx context.Context, q sqlx.QueryerContext, idx []int64) (map[int64][]byte, error) {
	query, args, err := sqlx.In(`SELECT idx, hash FROM tlog_hashes WHERE idx IN (?)`, idx)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		Idx  int64  `db:"idx"`
		Hash []byte `db:"hash"`
	}
	if err := sqlx.SelectContext(ctx, q, &rows, s.q(query), args...); err != nil {
		return nil, err
	}
	out := make(map[int64][]byte, len(idx))
	for _, r := range rows {
		out[r.Idx] = r.Hash
	}
	if s.db.Dialect != sqldb.SQLite || len(out) == len(idx) {
		return out, nil
	}
	var rest []int64
	for _, x := range idx {
		if _, ok := out[x]; !ok {
			rest = append(rest, x)
		}
	}
	found, err := batchHashes(ctx, q, rest)
	if err != nil {
		return nil, err
	}
	for x, h := range found {
		out[x] = h[:]
	}
	return out, nil
}

// ThreadLeaves: see ports.TransparencyLog. The queue is read before the
// tree: a flush that commits between the two reads then shows its leaves
// twice (dropped from the queue's side), never in neither, which
// verification would take for steps written behind the engine's back.
func (s *Store) ThreadLeaves(ctx context.Context, threadIDs []string) (map[string][]ports.LogLeafRecord, error) {
	out := map[string][]ports.LogLeafRecord{}
	ids := domain.ValidIDs(threadIDs)
	if len(ids) == 0 {
		return out, nil
	}
	q, args, err := sqlx.In(`SELECT thread_id, data FROM tlog_pending WHERE thread_id IN (?) ORDER BY seq`, ids)
	if err != nil {
		return nil, err
	}
	var pending []leafRow
	if err := s.db.SelectContext(ctx, &pending, s.q(q), args...); err != nil {
		return nil, sqldb.TranslateError(err)
	}
	if s.queueRead != nil {
		s.queueRead()
	}
	recs, err := s.leaves(ctx, `thread_id IN (?)`, ids)
	if err != nil {
		return nil, err
	}
	if s.db.Dialect == sqldb.SQLite {
		// The batches not indexed yet before the index (see tlog_sqlite.go).
		want := make(map[string]bool, len(ids))
		for _, id := range ids {
			want[id] = true
		}
		tail, err := s.tailLeaves(ctx, func(threadID, _ string) bool { return want[threadID] })
		if err != nil {
			return nil, err
		}
		batched, err := s.batchLeaves(ctx, `tlog_thread_leaves t`, `t.thread_id IN (?)`, ids)
		if err != nil {
			return nil, err
		}
		recs = mergeLeaves(recs, tail, batched)
	}
	inTree := make(map[string]bool, len(recs))
	for _, r := range recs {
		inTree[string(r.Data)] = true
	}
	// Queued leaves (not in the tree yet) come last, with index -1.
	for _, p := range pending {
		if inTree[p.Data] {
			continue // moved into the tree since the queue was read
		}
		p.Idx = -1
		rec, _ := p.record()
		rec.Stored = domain.LeafHash(rec.Data)
		recs = append(recs, rec)
	}
	for _, r := range recs {
		out[r.Leaf.ThreadID] = append(out[r.Leaf.ThreadID], r)
	}
	return out, nil
}

// FlushLog is also the port's Flush.
func (s *Store) Flush(ctx context.Context) error {
	_, err := s.FlushLog(ctx)
	return err
}

// StepLeaf: see ports.TransparencyLog.
func (s *Store) StepLeaf(ctx context.Context, stepID string) (ports.LogLeafRecord, error) {
	if !domain.ValidID(stepID) {
		return ports.LogLeafRecord{}, domain.NotFound("step")
	}
	recs, err := s.leaves(ctx, `step_id = ?`, stepID)
	if err != nil {
		return ports.LogLeafRecord{}, err
	}
	if len(recs) == 0 && s.db.Dialect == sqldb.SQLite {
		// Among the batches not indexed yet, then by the step's thread (the
		// step's row names it: a leaf of a step whose row was deleted in SQL
		// is not found by the step's id, only among its thread's leaves,
		// where verification names it).
		tail, err := s.tailLeaves(ctx, func(_, id string) bool { return id == stepID })
		if err != nil {
			return ports.LogLeafRecord{}, err
		}
		recs, err = s.batchLeaves(ctx, `thread_activities a JOIN tlog_thread_leaves t ON t.thread_id = a.thread_id AND t.step_id = a.id`,
			`a.id = ?`, stepID)
		if err != nil {
			return ports.LogLeafRecord{}, err
		}
		recs = mergeLeaves(tail, recs)
	}
	if len(recs) == 0 {
		return ports.LogLeafRecord{}, domain.NotFound("step " + stepID + " in the transparency log")
	}
	return recs[0], nil
}

// Hashes: see ports.TransparencyLog.
func (s *Store) Hashes(ctx context.Context) tlog.HashReader {
	return &hashReader{ctx: ctx, q: s.db, s: s}
}

type checkpointRow struct {
	Size      int64     `db:"size"`
	Root      []byte    `db:"root"`
	Note      string    `db:"note"`
	CreatedAt time.Time `db:"created_at"`
}

func (r checkpointRow) record() ports.SignedCheckpoint {
	c := ports.SignedCheckpoint{Size: r.Size, Note: r.Note, CreatedAt: r.CreatedAt.UTC()}
	copy(c.Root[:], r.Root)
	return c
}

func (s *Store) checkpoint(ctx context.Context, q string, args ...any) (ports.SignedCheckpoint, error) {
	var r checkpointRow
	err := s.db.GetContext(ctx, &r, s.q(`SELECT size, root, note, created_at FROM tlog_checkpoints `+q), args...)
	if errors.Is(err, sql.ErrNoRows) {
		return ports.SignedCheckpoint{}, domain.NotFound("checkpoint")
	}
	if err != nil {
		return ports.SignedCheckpoint{}, sqldb.TranslateError(err)
	}
	c := r.record()
	var lines []string
	if err := s.db.SelectContext(ctx, &lines, s.q(`SELECT lines FROM tlog_cosignatures WHERE size = ? ORDER BY witness`), c.Size); err != nil {
		return ports.SignedCheckpoint{}, sqldb.TranslateError(err)
	}
	for _, l := range lines {
		c.Note += l // signature lines, each ending in a newline
	}
	return c, nil
}

// Checkpoint: see ports.TransparencyLog.
func (s *Store) Checkpoint(ctx context.Context, size int64) (ports.SignedCheckpoint, error) {
	if size < 0 {
		return s.checkpoint(ctx, `ORDER BY size DESC LIMIT 1`)
	}
	return s.checkpoint(ctx, `WHERE size = ?`, size)
}

// CheckpointAtLeast: see ports.TransparencyLog.
func (s *Store) CheckpointAtLeast(ctx context.Context, size int64) (ports.SignedCheckpoint, error) {
	return s.checkpoint(ctx, `WHERE size >= ? ORDER BY size LIMIT 1`, size)
}

// SaveCheckpoint: see ports.TransparencyLog.
func (s *Store) SaveCheckpoint(ctx context.Context, c ports.SignedCheckpoint) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO tlog_checkpoints (size, root, note, created_at) VALUES (?,?,?,?)
 ON CONFLICT (size) DO NOTHING`), c.Size, c.Root[:], c.Note, sqldb.Time(c.CreatedAt))
	if err != nil {
		return fmt.Errorf("tlog_checkpoints: %w", err)
	}
	return nil
}

// AddCosignature: see ports.Checkpoints.
func (s *Store) AddCosignature(ctx context.Context, size int64, witness, lines string) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO tlog_cosignatures (size, witness, lines, created_at) VALUES (?,?,?,?)
 ON CONFLICT (size, witness) DO NOTHING`), size, witness, lines, sqldb.Time(time.Now()))
	if err != nil {
		return fmt.Errorf("tlog_cosignatures: %w", err)
	}
	return nil
}
