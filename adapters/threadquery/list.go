package threadquery

import (
	"context"
	"strings"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/ports"
)

// The thread list. A page is one index range scan: the filters below each
// have an index whose order is the list's (docs/operators/storage.md lists
// them), a page continues from a position (keyset) rather than skipping
// rows, the select list (refs) is computed for the page's rows only, and the
// total is a separate, bounded count asked only when a client selects it.

// listQuery is a thread search as SQL.
type listQuery struct {
	where []string
	args  []any
	// exact is the refValue search's "matches exactly" expression (1/0),
	// with its arguments; "0" without a refValue.
	exact     string
	exactArgs []any
	// tag is the tag filter's tag; with no other condition CountThreads
	// counts thread_tags' index entries alone.
	tag string
}

func (s *Store) listWhere(ctx context.Context, f ports.ThreadFilter) listQuery {
	q := listQuery{exact: "0"}
	add := func(cond string, args ...any) {
		q.where = append(q.where, cond)
		q.args = append(q.args, args...)
	}
	if f.Actor != "" {
		add(`EXISTS (SELECT 1 FROM thread_activities a WHERE a.thread_id = t.id AND (a.actor = ? OR a.actor_service = ?))`, f.Actor, f.Actor)
	}
	if f.ContractName != "" {
		add(`t.contract_name = ?`, f.ContractName)
		if f.ContractVersion != nil {
			add(`t.contract_version = ?`, *f.ContractVersion)
		}
	}
	if f.Status != "" {
		add(`t.status = ?`, f.Status)
	}
	if f.StartedAfter != nil {
		add(`t.created_at >= ?`, utc(f.StartedAfter))
	}
	if f.StartedBefore != nil {
		add(`t.created_at <= ?`, utc(f.StartedBefore))
	}
	if f.CompletedAfter != nil {
		add(`t.completed_at >= ?`, utc(f.CompletedAfter))
	}
	if f.CompletedBefore != nil {
		add(`t.completed_at <= ?`, utc(f.CompletedBefore))
	}
	if f.RefValue != "" {
		// Matching refs are found first (PostgreSQL: the pg_trgm index on
		// LOWER(ref_value); SQLite: the FTS5 trigram table when the term
		// has 3 characters or more), then their threads by primary key.
		cond, args := s.refMatch(ctx, f.RefValue)
		exactCond := `EXISTS (SELECT 1 FROM thread_refs r WHERE r.thread_id = t.id AND r.ref_value = ?`
		q.exactArgs = append(q.exactArgs, f.RefValue)
		if f.RefKey != "" {
			cond += ` AND LOWER(r.ref_key) = LOWER(?)`
			exactCond += ` AND LOWER(r.ref_key) = LOWER(?)`
			args = append(args, f.RefKey)
			q.exactArgs = append(q.exactArgs, f.RefKey)
		}
		add(`t.id IN (SELECT r.thread_id FROM thread_refs r WHERE `+cond+`)`, args...)
		q.exact = `CASE WHEN ` + exactCond + `) THEN 1 ELSE 0 END`
	} else if f.RefKey != "" {
		// Case-insensitive (orderid finds orderId): each listed thread is
		// probed by the primary key (thread_id, …), or, for a rare key,
		// PostgreSQL reads thread_refs_key_lower (LOWER(ref_key), ref_value).
		add(`EXISTS (SELECT 1 FROM thread_refs r WHERE r.thread_id = t.id AND LOWER(r.ref_key) = LOWER(?))`, f.RefKey)
	}
	if f.Party != nil {
		add(partyCond, f.Party.PrincipalID, f.Party.PrincipalID, utc(&f.Party.Now))
	}
	if len(f.Health) > 0 {
		var args []any
		for _, h := range f.Health {
			args = append(args, string(h))
		}
		add(`t.health IN (`+strings.TrimSuffix(strings.Repeat("?,", len(f.Health)), ",")+`)`, args...)
	}
	if f.Tag != "" {
		// thread_tags (migration 00087): a primary-key probe per listed
		// thread, or for a rare tag its (tag, created_at, thread_id) range.
		add(`EXISTS (SELECT 1 FROM thread_tags g WHERE g.thread_id = t.id AND g.tag = ?)`, f.Tag)
		q.tag = f.Tag
	}
	if f.IDPrefix != "" {
		p := strings.ToLower(f.IDPrefix)
		if len([]rune(p)) == 2 {
			// threads_id_prefix2_created (migration 00107): the id's first
			// two characters in list order, so the page reads its newest
			// matches only instead of sorting all of them (1/256 of the
			// threads). The same condition as the range below, written
			// once: PostgreSQL would multiply the two conditions'
			// selectivities as if independent and expect 256 times too few
			// matches. A longer prefix keeps the range (fewer matches to
			// sort than group entries to walk), a shorter one the list's
			// own order.
			add(s.idGroup()+` = ?`, p)
		} else if s.db.Dialect == sqldb.Postgres {
			// threads_id_prefix (text_pattern_ops) turns the LIKE into a range.
			add(`t.id LIKE ? ESCAPE '\'`, likeEscape(p)+"%")
		} else {
			// SQLite's LIKE ignores case and so cannot use the primary key:
			// the range finds the ids the way PostgreSQL's index does
			// (byte order, ids as stored), the LIKE keeps it exact.
			add(`t.id >= ? AND t.id < ? AND t.id LIKE ? ESCAPE '\'`, p, prefixEnd(p), likeEscape(p)+"%")
		}
	}
	// The first issue's rule and step: the Problems view's causes.
	if f.IssueType != "" {
		add(`t.first_issue_type = ?`, f.IssueType)
	}
	if f.IssueStep != "" {
		add(`t.first_issue_step = ?`, f.IssueStep)
	}
	return q
}

// idGroup is the expression threads_id_prefix2_created is built on, as
// each dialect writes it (an expression index is used only for the same
// expression).
func (s *Store) idGroup() string {
	if s.db.Dialect == sqldb.Postgres {
		return `left(t.id, 2)`
	}
	return `substr(t.id, 1, 2)`
}

// prefixEnd is the smallest string greater than every string starting with
// p (in byte order).
func prefixEnd(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return "\U0010FFFF"
}

// refMatch is the condition on thread_refs r for a ref value containing v
// (case-insensitive).
func (s *Store) refMatch(ctx context.Context, v string) (string, []any) {
	pattern := "%" + likeEscape(strings.ToLower(v)) + "%"
	if s.db.Dialect == sqldb.Postgres {
		// The index reads the term's uncommon words; the term filters what
		// it returns (|| '' keeps it out of the index condition, where its
		// common trigrams would be read again). refstats.go.
		if ip := refIndexPattern(strings.ToLower(v), s.refStats(ctx)); ip != "" {
			return `LOWER(r.ref_value) LIKE ? AND (LOWER(r.ref_value) || '') LIKE ? ESCAPE '\'`, []any{ip, pattern}
		}
	}
	if s.db.Dialect == sqldb.SQLite && len([]rune(v)) >= 3 {
		// The trigram table answers LIKE from its index only without an
		// ESCAPE clause, so it gets the value unescaped: a % or _ in it
		// matches more, never less, and the escaped LOWER LIKE below keeps
		// the result exact. As on PostgreSQL it is asked for the term's
		// uncommon words only when it has some (refstats.go: a sample of
		// the refs stands for ANALYZE's statistics).
		ip := refIndexPattern(strings.ToLower(v), s.refStats(ctx))
		if ip == "" {
			ip = "%" + v + "%"
		}
		return `r.rowid IN (SELECT rowid FROM thread_refs_trgm WHERE ref_value LIKE ?) AND LOWER(r.ref_value) LIKE ? ESCAPE '\'`,
			[]any{ip, pattern}
	}
	return `LOWER(r.ref_value) LIKE ? ESCAPE '\'`, []any{pattern}
}

func (q listQuery) whereSQL(extra ...string) string {
	w := append(append([]string{}, q.where...), extra...)
	if len(w) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w, " AND ")
}

// sortKey is one key of a list's order: inner is its expression in the
// page's own statement, outer in the statement that reads the page's rows.
type sortKey struct {
	inner, outer string
	args         []any  // inner's arguments
	alias        string // what the page's ORDER BY names instead of inner
	desc         bool
	val          func(ports.ThreadPosition) any
}

// sortKeys is the list's order: exact ref matches first in a refValue
// search, then newest (or longest) first, id breaking ties.
func (q listQuery) sortKeys(f ports.ThreadFilter) []sortKey {
	var keys []sortKey
	if f.RefValue != "" {
		keys = append(keys, sortKey{inner: q.exact, outer: `p.exact_match`, alias: `exact_match`, args: q.exactArgs, desc: true,
			val: func(p ports.ThreadPosition) any {
				if p.Exact {
					return 1
				}
				return 0
			}})
	}
	created := sortKey{inner: `t.created_at`, outer: `t.created_at`, desc: !f.Ascending,
		val: func(p ports.ThreadPosition) any { return p.CreatedAt.UTC() }}
	id := sortKey{inner: `t.id`, outer: `t.id`, desc: !f.Ascending, val: func(p ports.ThreadPosition) any { return p.ID }}
	if f.OrderBy == ports.OrderDuration {
		// ended_duration_ms: duration_ms once ended, 0 while active
		// (migration 00106: a step leaves it unchanged, so the update
		// stays heap-only on PostgreSQL).
		keys = append(keys, sortKey{inner: `t.ended_duration_ms`, outer: `t.ended_duration_ms`, desc: !f.Ascending,
			val: func(p ports.ThreadPosition) any { return p.DurationMs }})
		// Ties: newest first whichever way durations sort.
		created.desc, id.desc = true, true
	}
	return append(keys, created, id)
}

func orderSQL(keys []sortKey, outer bool) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		e := k.inner
		switch {
		case outer:
			e = k.outer
		case k.alias != "":
			e = k.alias
		}
		if k.desc {
			parts[i] = e + " DESC"
		} else {
			parts[i] = e + " ASC"
		}
	}
	return strings.Join(parts, ", ")
}

// seek is the condition "sorts after p" in the order keys: a row value
// comparison when every key runs one way and none takes arguments (an
// index range start), else the expanded form.
func seek(keys []sortKey, p ports.ThreadPosition) (string, []any) {
	same := true
	for _, k := range keys {
		if k.desc != keys[0].desc || len(k.args) > 0 {
			same = false
		}
	}
	if same {
		cols, marks := make([]string, len(keys)), make([]string, len(keys))
		args := make([]any, len(keys))
		for i, k := range keys {
			cols[i], marks[i], args[i] = k.inner, "?", k.val(p)
		}
		op := " > "
		if keys[0].desc {
			op = " < "
		}
		return "(" + strings.Join(cols, ", ") + ")" + op + "(" + strings.Join(marks, ", ") + ")", args
	}
	var ors []string
	var args []any
	for i, k := range keys {
		var ands []string
		for _, e := range keys[:i] {
			ands = append(ands, e.inner+" = ?")
			args = append(append(args, e.args...), e.val(p))
		}
		op := " > ?"
		if k.desc {
			op = " < ?"
		}
		ands = append(ands, k.inner+op)
		args = append(append(args, k.args...), k.val(p))
		ors = append(ors, "("+strings.Join(ands, " AND ")+")")
	}
	return "(" + strings.Join(ors, " OR ") + ")", args
}

// ListThreads returns one page of threads in the filter's order. The page's
// ids are chosen by one statement that reads only index entries and the
// filtered rows up to the page (never the refs of skipped rows); the outer
// statement reads those rows and their refs.
func (s *Store) ListThreads(ctx context.Context, f ports.ThreadFilter) ([]ports.ThreadView, error) {
	if f.Limit <= 0 {
		return nil, nil
	}
	q := s.listWhere(ctx, f)
	keys := q.sortKeys(f)
	var extra []string
	var seekArgs []any
	backward := f.Before != nil
	if f.After != nil {
		c, a := seek(keys, *f.After)
		extra, seekArgs = append(extra, c), append(seekArgs, a...)
	}
	if backward {
		// The page before a position: walk the order backwards from it,
		// then put the rows back in list order.
		rev := make([]sortKey, len(keys))
		for i, k := range keys {
			k.desc = !k.desc
			rev[i] = k
		}
		c, a := seek(rev, *f.Before)
		extra, seekArgs = append(extra, c), append(seekArgs, a...)
		keys = rev
	}
	inner := `SELECT t.id, ` + q.exact + ` AS exact_match FROM threads t` + q.whereSQL(extra...) +
		` ORDER BY ` + orderSQL(keys, false) + ` LIMIT ? OFFSET ?`
	query := `SELECT ` + threadCols + s.refsCol() + `, 0 AS total, p.exact_match FROM (` + inner +
		`) p JOIN threads t ON t.id = p.id ORDER BY ` + orderSQL(keys, true)
	args := append(append(append(append([]any{}, q.exactArgs...), q.args...), seekArgs...), f.Limit, f.Offset)
	rows, err := queryRows[threadRow](ctx, s, false, query, args...)
	if err != nil {
		return nil, err
	}
	out := make([]ports.ThreadView, len(rows))
	for i, r := range rows {
		j := i
		if backward {
			j = len(rows) - 1 - i
		}
		out[j] = r.view()
		out[j].ExactRef = r.Exact.N == 1
	}
	return out, nil
}

// CountThreads counts matching threads up to upTo: the inner LIMIT stops
// the scan there, so an unselective filter costs upTo index entries, not
// the table.
func (s *Store) CountThreads(ctx context.Context, f ports.ThreadFilter, upTo int) (int, error) {
	if upTo <= 0 {
		return 0, nil
	}
	q := s.listWhere(ctx, f)
	var n []int
	query, args := `SELECT COUNT(*) FROM (SELECT 1 FROM threads t`+q.whereSQL()+` LIMIT ?) x`, append(append([]any{}, q.args...), upTo)
	if q.tag != "" && len(q.where) == 1 {
		// Every thread_tags row is a thread's: its index answers alone.
		query, args = `SELECT COUNT(*) FROM (SELECT 1 FROM thread_tags WHERE tag = ? LIMIT ?) x`, []any{q.tag, upTo}
	}
	err := s.selectRaw(ctx, &n, query, args...)
	if err != nil {
		return 0, err
	}
	return n[0], nil
}
