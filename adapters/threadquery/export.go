package threadquery

import (
	"context"
	"strings"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/ports"
)

var _ ports.ThreadLister = (*Store)(nil)

type cursorRow struct {
	ID        string `db:"id"`
	CreatedAt dbTime `db:"created_at"`
}

// ListThreadIDs: see ports.ThreadLister. Keyset pagination on the
// (created_at, id) index (threads_created_id; threads_created on SQLite), so
// every page costs the same. The filters are the thread list's (listWhere),
// so an export holds exactly what the list shows.
func (s *Store) ListThreadIDs(ctx context.Context, f ports.ExportFilter, after *ports.ThreadCursor, limit int) ([]ports.ThreadCursor, error) {
	lf := ports.ThreadFilter{Status: f.Status, ContractName: f.ContractName, Health: f.Health, Tag: f.Tag, IDPrefix: f.IDPrefix,
		RefKey: f.RefKey, RefValue: f.RefValue, IssueType: f.IssueType, IssueStep: f.IssueStep}
	if f.ContractName != "" && f.ContractVersion > 0 {
		v := f.ContractVersion
		lf.ContractVersion = &v
	}
	lq := s.listWhere(ctx, lf)
	where, args := lq.where, lq.args
	if !f.StartedSince.IsZero() {
		where, args = append(where, "t.created_at >= ?"), append(args, sqldb.Time(f.StartedSince))
	}
	if !f.StartedBefore.IsZero() {
		where, args = append(where, "t.created_at < ?"), append(args, sqldb.Time(f.StartedBefore))
	}
	if after != nil {
		at := sqldb.Time(after.CreatedAt)
		where, args = append(where, "(t.created_at > ? OR (t.created_at = ? AND t.id > ?))"), append(args, at, at, after.ID)
	}
	q := "SELECT t.id, t.created_at FROM threads t"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY t.created_at, t.id LIMIT ?"
	var rows []cursorRow
	if err := s.selectRaw(ctx, &rows, q, append(args, limit)...); err != nil {
		return nil, sqldb.TranslateError(err)
	}
	out := make([]ports.ThreadCursor, len(rows))
	for i, r := range rows {
		out[i] = ports.ThreadCursor{ID: r.ID, CreatedAt: r.CreatedAt.T}
	}
	return out, nil
}

type storedBytesRow struct {
	ThreadID string `db:"thread_id"`
	Bytes    int64  `db:"bytes"`
}

// StoredBytes: see ports.ThreadLister. Octets, not characters (SQLite's
// length of a blob, PostgreSQL's octet_length; an attempt's context by
// its context_bytes, see contextSize), read from the rows' thread_id
// indexes: every large column an export loads (attempts' context
// and metadata, steps' latest contexts — their latest attempt's context, read
// again for the step — sub-steps' payloads, validations'
// issues, notifications' messages and details).
func (s *Store) StoredBytes(ctx context.Context, threadIDs []string) (map[string]int64, error) {
	out := map[string]int64{}
	if len(threadIDs) == 0 {
		return out, nil
	}
	size := func(col string) string {
		if s.db.Dialect == sqldb.SQLite {
			return `COALESCE(length(CAST(` + col + ` AS BLOB)), 0)`
		}
		return `COALESCE(octet_length(CAST(` + col + ` AS TEXT)), 0)`
	}
	q := `SELECT thread_id, SUM(b) AS bytes FROM (
 SELECT a.thread_id, ` + contextSize(s.db.Dialect, "a") + ` + ` + size("a.metadata") + ` AS b FROM thread_activities a WHERE a.thread_id IN (?)
 UNION ALL
 SELECT s.thread_id, ` + contextSize(s.db.Dialect, "l") + ` AS b FROM thread_step_states s
 JOIN thread_activities l ON l.id = s.latest_step_id WHERE s.thread_id IN (?)
 UNION ALL
 SELECT u.thread_id, ` + size("u.payload") + ` AS b FROM step_substeps u WHERE u.thread_id IN (?)
 UNION ALL
 SELECT v.thread_id, ` + size("v.issues") + ` AS b FROM thread_validations v WHERE v.thread_id IN (?)
 UNION ALL
 SELECT n.thread_id, ` + size("n.message") + ` + ` + size("n.details") + ` AS b FROM thread_notifications n WHERE n.thread_id IN (?)
) x GROUP BY thread_id`
	var rows []storedBytesRow
	if err := s.selectIn(ctx, &rows, q, threadIDs, threadIDs, threadIDs, threadIDs, threadIDs); err != nil {
		return nil, sqldb.TranslateError(err)
	}
	for _, r := range rows {
		out[r.ThreadID] = r.Bytes
	}
	return out, nil
}
