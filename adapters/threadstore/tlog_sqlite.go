package threadstore

// The transparency log's tables on SQLite (db/sqlite/00099_tlog_batches.sql):
// one tlog_batches row per appending transaction holds its leaves and the
// stored hashes they complete; it is the only row the log writes in a step's
// transaction, so an acknowledged step's leaf is committed with it. The
// log's size is the end of the last batch (sizeSQL): tlog_state is not
// updated per commit (the sequencer brings its size up to date). tlog_thread_leaves lists every leaf by thread: it is
// derived from the batches by the sequencer (indexBatches, after the commits
// of the next moment, in one transaction for many of them; from the entries
// this process remembered of the batches it committed, decoding only the
// others) up to
// tlog_state.indexed_to, and every reader by thread or step reads the batches
// from indexed_to on as well, so a leaf not indexed yet is never missed.
// Leaves appended before that migration stay in tlog_leaves_v1 and
// tlog_hashes; every read looks there too.
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
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
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

// sizeSQL reads the log's size on SQLite: the end of the last batch, or
// tlog_state.size when that is more (leaves from before migration 00099,
// or an empty log). Appends read it inside their write transaction: SQLite
// has one writer at a time, so no other append can come between.
const sizeSQL = `SELECT MAX(s.size, COALESCE((SELECT b.start + b.count FROM tlog_batches b ORDER BY b.start DESC LIMIT 1), 0))
 FROM tlog_state s WHERE s.id = 1`

// batchParts writes leaves appended at start… and the stored hashes they
// complete (hidx, contiguous from StoredHashIndex(0, start)) as one batch
// row.
func batchParts(leaves []leafIn, start int64, hidx []int64, hashes []tlog.Hash, now time.Time) ([]part, error) {
	hstart := tlog.StoredHashIndex(0, start)
	hs := make([]byte, 0, len(hashes)*tlog.HashSize)
	for i, x := range hidx {
		if x != hstart+int64(i) {
			return nil, fmt.Errorf("transparency log: stored hash %d where %d was due", x, hstart+int64(i))
		}
		hs = append(hs, hashes[i][:]...)
	}
	return []part{{q: `INSERT INTO tlog_batches (start, count, hstart, leaves, hashes, created_at) VALUES (?,?,?,?,?,?)`,
		args: []any{start, len(leaves), hstart, leavesJSON(leaves), hs, sqldb.Time(now)}}}, nil
}

// leavesJSON is the batch's leaves column: a JSON array of the leaves'
// bytes as strings, written in one buffer (json.Encoder over a copy of each
// leaf as a string made about three times the bytes, per step, in garbage).
// The bytes are encoding/json's with SetEscapeHTML(false) for valid UTF-8
// (a leaf's canonical JSON is): '"', '\\', control characters, U+2028 and
// U+2029 escaped (TestLeavesJSONIsEncodingJSON).
func leavesJSON(leaves []leafIn) string {
	n := 2
	for _, l := range leaves {
		n += len(l.data) + 3 + bytes.Count(l.data, []byte{'"'}) // most escapes are quotes
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteByte('[')
	for i, l := range leaves {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		writeJSONStringBody(&b, l.data)
		b.WriteByte('"')
	}
	b.WriteByte(']')
	return b.String()
}

func writeJSONStringBody(b *strings.Builder, d []byte) {
	const hex = "0123456789abcdef"
	from := 0
	for i := 0; i < len(d); i++ {
		c := d[i]
		var esc string
		switch {
		case c == '"':
			esc = `\"`
		case c == '\\':
			esc = `\\`
		case c == '\n':
			esc = `\n`
		case c == '\r':
			esc = `\r`
		case c == '\t':
			esc = `\t`
		case c == '\b':
			esc = `\b`
		case c == '\f':
			esc = `\f`
		case c < 0x20:
			esc = `\u00` + string(hex[c>>4]) + string(hex[c&0xf])
		case c == 0xe2 && i+2 < len(d) && d[i+1] == 0x80 && (d[i+2] == 0xa8 || d[i+2] == 0xa9):
			esc = `\u202` + string(hex[d[i+2]&0xf])
			b.Write(d[from:i])
			b.WriteString(esc)
			i += 2
			from = i + 1
			continue
		default:
			continue
		}
		b.Write(d[from:i])
		b.WriteString(esc)
		from = i + 1
	}
	b.Write(d[from:])
}

// leafIDs are the thread and step a leaf names (step empty for a
// tombstone); ok is false for bytes that are not a leaf (an edited batch).
func leafIDs(data string) (threadID, stepID string, ok bool) {
	var v struct {
		Type     string `json:"type"`
		ThreadID string `json:"thread_id"`
		StepID   string `json:"step_id"`
	}
	if err := json.Unmarshal([]byte(data), &v); err != nil || v.ThreadID == "" {
		return "", "", false
	}
	if v.Type != domain.LeafStep {
		v.StepID = ""
	}
	return v.ThreadID, v.StepID, true
}

// decodeBatch is a batch's leaves (nil if the row was edited into
// something else).
func decodeBatch(leaves string) []string {
	var data []string
	if err := json.Unmarshal([]byte(leaves), &data); err != nil {
		return nil
	}
	return data
}

// indexBatchesLimit is how many batches one indexing round reads.
const indexBatchesLimit = 1000

// listEntry is a leaf's entry in tlog_thread_leaves (its index is the
// batch's start plus its position; stepID empty for a tombstone).
type listEntry struct{ threadID, stepID string }

// seenBatch is a batch this process committed, with its leaves' entries:
// the listing round takes them from here instead of decoding the batch's
// JSON (tlog_sqlite.go, indexBatches).
type seenBatch struct {
	start   int64
	entries []listEntry
}

// maxSeenBatches bounds the batches remembered for the listing round (when
// no sequencer runs, or it falls behind): past it, batches are decoded.
const maxSeenBatches = 1 << 12

// batchEntries are the listing entries of leaves appended at start.
func batchEntries(leaves []leafIn, start int64) seenBatch {
	b := seenBatch{start: start, entries: make([]listEntry, len(leaves))}
	for i, l := range leaves {
		b.entries[i].threadID = l.threadID
		if id, ok := l.stepID.(string); ok {
			b.entries[i].stepID = id
		}
	}
	return b
}

// rememberBatches keeps the entries of batches that committed (SQLite has
// one writer process, so they are nearly all the batches there are). Only
// committed ones: a rolled-back batch's start is written again, by this
// process or another, with other leaves.
func (s *Store) rememberBatches(bs []seenBatch) {
	if len(bs) == 0 {
		return
	}
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	if s.seen == nil {
		s.seen = map[int64][]listEntry{}
	}
	for _, b := range bs {
		if len(s.seen) >= maxSeenBatches {
			return
		}
		s.seen[b.start] = b.entries
	}
}

// takeSeen returns (and forgets) the entries remembered for the batch at
// start, if they are count of them.
func (s *Store) takeSeen(start int64, count int) ([]listEntry, bool) {
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	e, ok := s.seen[start]
	if !ok {
		return nil, false
	}
	delete(s.seen, start)
	return e, len(e) == count
}

// forgetSeenBelow drops the entries of batches before next (listed by now,
// in this round or by another process).
func (s *Store) forgetSeenBelow(next int64) {
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	for start := range s.seen {
		if start < next {
			delete(s.seen, start)
		}
	}
}

// listInsertRows are the sizes of the listing's INSERT statements: fixed
// texts, prepared once (a text per count of entries, as before, was parsed
// at every round), the entries of a round going through the largest first.
var listInsertRows = [...]int{64, 8, 1}

func listInsertSQL(rows int) string {
	return `INSERT OR IGNORE INTO tlog_thread_leaves (thread_id, idx, batch, step_id) VALUES ` +
		strings.TrimSuffix(strings.Repeat(`(?,?,?,?),`, rows), ",")
}

var listInsertSQLs = func() (out [len(listInsertRows)]string) {
	for i, n := range listInsertRows {
		out[i] = listInsertSQL(n)
	}
	return out
}()

// indexBatches adds the tlog_thread_leaves entries of the batches appended
// since tlog_state.indexed_to (up to indexBatchesLimit of them) inside tx
// and moves indexed_to past them (and tlog_state.size, which appends do not
// update on SQLite, up to them). It returns how many batches it indexed.
// Entries are derived data: inserted OR IGNORE, so a round repeated after a
// crash adds nothing twice. A batch this process committed is listed from
// the entries it remembered (rememberBatches); any other (another process's,
// one committed before a restart) is decoded from its JSON.
func (s *Store) indexBatches(ctx context.Context, tx *sqlx.Tx) (int, error) {
	var from int64
	if err := s.get(ctx, tx, &from, `SELECT indexed_to FROM tlog_state WHERE id = 1`); err != nil {
		return 0, fmt.Errorf("tlog_state: %w", err)
	}
	var rows []struct {
		Start int64 `db:"start"`
		Count int   `db:"count"`
	}
	if err := s.selectTx(ctx, tx, &rows, `SELECT start, count FROM tlog_batches WHERE start >= ? ORDER BY start LIMIT ?`,
		from, indexBatchesLimit); err != nil {
		return 0, fmt.Errorf("tlog_batches: %w", err)
	}
	if len(rows) == 0 {
		return 0, nil
	}
	args := make([]any, 0, 4*64)
	var entries int
	var unseen []int64
	next := from
	add := func(threadID string, idx, batch int64, stepID string) {
		args = append(args, threadID, idx, batch, nullStr(stepID))
		entries++
	}
	for _, r := range rows {
		if es, ok := s.takeSeen(r.Start, r.Count); ok {
			for k, e := range es {
				add(e.threadID, r.Start+int64(k), r.Start, e.stepID)
			}
			next = max(next, r.Start+int64(max(len(es), 1)))
			continue
		}
		unseen = append(unseen, r.Start)
	}
	if len(unseen) > 0 {
		var leaves []struct {
			Start  int64  `db:"start"`
			Leaves string `db:"leaves"`
		}
		if err := tx.SelectContext(ctx, &leaves, `SELECT start, leaves FROM tlog_batches WHERE start >= ? AND start <= ? ORDER BY start`,
			unseen[0], unseen[len(unseen)-1]); err != nil {
			return 0, fmt.Errorf("tlog_batches: %w", err)
		}
		for _, r := range leaves {
			if _, ok := slices.BinarySearch(unseen, r.Start); !ok {
				continue
			}
			data := decodeBatch(r.Leaves)
			for k, d := range data {
				// A leaf that names no thread (an edited batch) is listed
				// nowhere; proofs and tree hashes still cover it.
				if threadID, stepID, ok := leafIDs(d); ok {
					add(threadID, r.Start+int64(k), r.Start, stepID)
				}
			}
			next = max(next, r.Start+int64(max(len(data), 1)))
		}
	}
	// Fixed statement texts (listInsertRows), prepared: entries in chunks
	// of the largest size that fits, the rest in smaller ones.
	for i, per := range listInsertRows {
		for entries >= per {
			if err := s.exec(ctx, tx, listInsertSQLs[i], args[:4*per]...); err != nil {
				return 0, fmt.Errorf("tlog_thread_leaves: %w", err)
			}
			args, entries = args[4*per:], entries-per
		}
	}
	if err := s.exec(ctx, tx, `UPDATE tlog_state SET indexed_to = ?, size = MAX(size, ?) WHERE id = 1`, next, next); err != nil {
		return 0, fmt.Errorf("tlog_state: %w", err)
	}
	s.forgetSeenBelow(next)
	return len(rows), nil
}

// indexAll indexes every batch not indexed yet, inside tx.
func (s *Store) indexAll(ctx context.Context, tx *sqlx.Tx) error {
	for {
		n, err := s.indexBatches(ctx, tx)
		if err != nil || n < indexBatchesLimit {
			return err
		}
	}
}

// indexLog indexes the batches appended since the last round (SQLite;
// nothing on PostgreSQL), a transaction per indexBatchesLimit batches.
func (s *Store) indexLog(ctx context.Context) error {
	if s.db.Dialect != sqldb.SQLite {
		return nil
	}
	var st struct {
		Size      int64 `db:"size"`
		IndexedTo int64 `db:"indexed_to"`
	}
	if err := s.db.GetContext(ctx, &st, `SELECT (`+sizeSQL+`) AS size, indexed_to FROM tlog_state WHERE id = 1`); err != nil {
		return sqldb.TranslateError(err)
	}
	if st.IndexedTo >= st.Size {
		return nil
	}
	for {
		n := 0
		err := s.logTx(ctx, true, func(tx *sqlx.Tx) error {
			var err error
			n, err = s.indexBatches(ctx, tx)
			return err
		})
		if err != nil {
			return sqldb.TranslateError(err)
		}
		if n > 0 {
			s.logFlushes.Add(1)
		}
		if n < indexBatchesLimit {
			return nil
		}
	}
}

// tailLeaves reads the leaves of the batches not indexed yet that match
// (thread and step of each leaf), in log order.
func (s *Store) tailLeaves(ctx context.Context, match func(threadID, stepID string) bool) ([]ports.LogLeafRecord, error) {
	var rows []batchRow
	if err := s.db.SelectContext(ctx, &rows, `SELECT start, hstart, leaves, hashes FROM tlog_batches
 WHERE start >= (SELECT indexed_to FROM tlog_state WHERE id = 1) ORDER BY start`); err != nil {
		return nil, sqldb.TranslateError(err)
	}
	var out []ports.LogLeafRecord
	for _, r := range rows {
		for k, d := range decodeBatch(r.Leaves) {
			threadID, stepID, ok := leafIDs(d)
			if !ok || !match(threadID, stepID) {
				continue
			}
			lr := leafRow{Idx: r.Start + int64(k), ThreadID: threadID, Data: d}
			if h, ok := r.hash(tlog.StoredHashIndex(0, lr.Idx)); ok {
				lr.Stored = h[:]
			}
			rec, _ := lr.record()
			out = append(out, rec)
		}
	}
	return out, nil
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
			data = decodeBatch(r.Leaves) // nil for an edited batch: its leaves read as missing
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

// mergeLeaves joins leaves read from several places in log order, each
// index once (a leaf indexed between two reads is read twice).
func mergeLeaves(sets ...[]ports.LogLeafRecord) []ports.LogLeafRecord {
	var out []ports.LogLeafRecord
	for _, s := range sets {
		out = append(out, s...)
	}
	slices.SortStableFunc(out, func(x, y ports.LogLeafRecord) int { return cmp.Compare(x.Index, y.Index) })
	return slices.CompactFunc(out, func(x, y ports.LogLeafRecord) bool { return x.Index == y.Index })
}
