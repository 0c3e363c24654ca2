package threadstore

// The transparency log's tables on SQLite (db/sqlite/00099_tlog_batches.sql):
// one tlog_batches row per appending transaction holds its leaves and the
// stored hashes they complete, and tlog_thread_leaves one small entry per
// leaf, keyed by thread. Leaves appended before that migration stay in
// tlog_leaves_v1 and tlog_hashes; every read looks in both.
//
// A step's transaction used to write a leaf row with two secondary indexes
// (one keyed by the step's random UUID) and about two stored-hash rows: the
// log cost about +19 % per acknowledged step, most of it in those rows'
// inserts and the random index pages the commit wrote
// (docs/contributors/performance.md, "Transparency log").

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/jmoiron/sqlx"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/ports"
)

// leafTable is the table of one row per leaf: all of them on PostgreSQL,
// those appended before migration 00099 on SQLite (where tlog_leaves is a
// view over both formats).
func (s *Store) leafTable() string {
	if s.db.Dialect == sqldb.SQLite {
		return "tlog_leaves_v1"
	}
	return "tlog_leaves"
}

// noLeafSQL is the condition that the step a (an alias of
// thread_activities) has no leaf in the tree or in the queue.
func (s *Store) noLeafSQL() string {
	c := ` AND NOT EXISTS (SELECT 1 FROM ` + s.leafTable() + ` l WHERE l.step_id = a.id)
 AND NOT EXISTS (SELECT 1 FROM tlog_pending p WHERE p.step_id = a.id)`
	if s.db.Dialect == sqldb.SQLite {
		c += `
 AND NOT EXISTS (SELECT 1 FROM tlog_thread_leaves t WHERE t.thread_id = a.thread_id AND t.step_id = a.id)`
	}
	return c
}

// batchParts writes leaves appended at start… and the stored hashes they
// complete (hidx, contiguous from StoredHashIndex(0, start)) as one batch
// row and one tlog_thread_leaves entry per leaf.
func batchParts(leaves []leafIn, start int64, hidx []int64, hashes []tlog.Hash, now time.Time) ([]part, error) {
	hstart := tlog.StoredHashIndex(0, start)
	hs := make([]byte, 0, len(hashes)*tlog.HashSize)
	for i, x := range hidx {
		if x != hstart+int64(i) {
			return nil, fmt.Errorf("transparency log: stored hash %d where %d was due", x, hstart+int64(i))
		}
		hs = append(hs, hashes[i][:]...)
	}
	data := make([]string, len(leaves))
	rows := make([][]any, len(leaves))
	for i, l := range leaves {
		data[i] = string(l.data)
		rows[i] = []any{l.threadID, start + int64(i), start, l.stepID}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(data); err != nil {
		return nil, err
	}
	parts := []part{{q: `INSERT INTO tlog_batches (start, hstart, leaves, hashes, created_at) VALUES (?,?,?,?,?)`,
		args: []any{start, hstart, string(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), hs, sqldb.Time(now)}}}
	return append(parts, rowsParts(`INSERT INTO tlog_thread_leaves (thread_id, idx, batch, step_id) VALUES `, `(?,?,?,?)`, "", 4, rows)...), nil
}

// leafOfHash is the leaf whose append wrote stored hash x.
func leafOfHash(x int64) int64 {
	// The largest n with StoredHashIndex(0, n) <= x (it grows with n and
	// is at least n).
	return int64(sort.Search(int(x)+1, func(n int) bool { return tlog.StoredHashIndex(0, int64(n)) > x })) - 1
}

type batchRow struct {
	Start  int64  `db:"start"`
	HStart int64  `db:"hstart"`
	Hashes []byte `db:"hashes"`
	Leaves string `db:"leaves"`
}

// hash is stored hash x if this batch holds it.
func (b batchRow) hash(x int64) (tlog.Hash, bool) {
	var h tlog.Hash
	off := (x - b.HStart) * tlog.HashSize
	if x < b.HStart || off+tlog.HashSize > int64(len(b.Hashes)) {
		return h, false
	}
	copy(h[:], b.Hashes[off:off+tlog.HashSize])
	return h, true
}

// batchHashes reads stored hashes from tlog_batches (one query: the batch
// of each hash's leaf, the last starting at or before it); those it does
// not hold are left out.
func batchHashes(ctx context.Context, q sqlx.QueryerContext, idx []int64) (map[int64]tlog.Hash, error) {
	out := make(map[int64]tlog.Hash, len(idx))
	if len(idx) == 0 {
		return out, nil
	}
	ns := make([]int64, len(idx))
	for i, x := range idx {
		ns[i] = leafOfHash(x)
	}
	slices.Sort(ns)
	ns = slices.Compact(ns)
	arg, _ := json.Marshal(ns)
	var rows []batchRow
	if err := sqlx.SelectContext(ctx, q, &rows, `SELECT start, hstart, hashes, '' AS leaves FROM tlog_batches
 WHERE start IN (SELECT (SELECT max(start) FROM tlog_batches WHERE start <= v.value) FROM json_each(?) v) ORDER BY start`, string(arg)); err != nil {
		return nil, fmt.Errorf("tlog_batches: %w", err)
	}
	for _, x := range idx {
		// The batch holding x is the last one starting at or before its leaf.
		n := leafOfHash(x)
		i := sort.Search(len(rows), func(i int) bool { return rows[i].Start > n }) - 1
		if i < 0 {
			continue
		}
		if h, ok := rows[i].hash(x); ok {
			out[x] = h
		}
	}
	return out, nil
}

// batchLeaves reads the leaves tlog_thread_leaves lists that match where
// (over t, tlog_thread_leaves, and a, thread_activities when join says so;
// sqlx.In arguments), in log order, each with its stored leaf hash.
func (s *Store) batchLeaves(ctx context.Context, join, where string, args ...any) ([]ports.LogLeafRecord, error) {
	q, qargs, err := sqlx.In(`SELECT t.idx, t.thread_id, b.start, b.hstart, b.leaves, b.hashes FROM `+join+`
 JOIN tlog_batches b ON b.start = t.batch WHERE `+where+` ORDER BY t.idx`, args...)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		Idx      int64  `db:"idx"`
		ThreadID string `db:"thread_id"`
		batchRow
	}
	if err := s.db.SelectContext(ctx, &rows, q, qargs...); err != nil {
		return nil, sqldb.TranslateError(err)
	}
	decoded := map[int64][]string{}
	out := make([]ports.LogLeafRecord, 0, len(rows))
	for _, r := range rows {
		data, ok := decoded[r.Start]
		if !ok {
			if err := json.Unmarshal([]byte(r.Leaves), &data); err != nil {
				data = nil // an edited batch: the leaves read as missing
			}
			decoded[r.Start] = data
		}
		lr := leafRow{Idx: r.Idx, ThreadID: r.ThreadID}
		if k := r.Idx - r.Start; k >= 0 && k < int64(len(data)) {
			lr.Data = data[k]
		}
		if h, ok := r.hash(tlog.StoredHashIndex(0, r.Idx)); ok {
			lr.Stored = h[:]
		}
		rec, _ := lr.record()
		out = append(out, rec)
	}
	return out, nil
}

// mergeLeaves joins leaves of the two formats in log order.
func mergeLeaves(a, b []ports.LogLeafRecord) []ports.LogLeafRecord {
	if len(a) == 0 {
		return b
	}
	out := append(a, b...)
	slices.SortStableFunc(out, func(x, y ports.LogLeafRecord) int { return cmp.Compare(x.Index, y.Index) })
	return out
}
