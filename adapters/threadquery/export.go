package threadquery

import (
	"context"
	"encoding/json"
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
// threads_created index, so every page costs the same.
func (s *Store) ListThreadIDs(ctx context.Context, f ports.ExportFilter, after *ports.ThreadCursor, limit int) ([]ports.ThreadCursor, error) {
	var where []string
	var args []any
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, f.Status)
	}
	if f.ContractName != "" {
		where, args = append(where, "contract_name = ?"), append(args, f.ContractName)
		if f.ContractVersion > 0 {
			where, args = append(where, "contract_version = ?"), append(args, f.ContractVersion)
		}
	}
	if !f.StartedSince.IsZero() {
		where, args = append(where, "created_at >= ?"), append(args, sqldb.Time(f.StartedSince))
	}
	if !f.StartedBefore.IsZero() {
		where, args = append(where, "created_at < ?"), append(args, sqldb.Time(f.StartedBefore))
	}
	w, a := s.listConds(f)
	where, args = append(where, w...), append(args, a...)
	if after != nil {
		at := sqldb.Time(after.CreatedAt)
		where, args = append(where, "(created_at > ? OR (created_at = ? AND id > ?))"), append(args, at, at, after.ID)
	}
	q := "SELECT id, created_at FROM threads"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY created_at, id LIMIT ?"
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

// listConds are the thread list's filters an export shares (see
// ports.ExportFilter), on the unaliased threads table.
func (s *Store) listConds(f ports.ExportFilter) (where []string, args []any) {
	add := func(cond string, a ...any) { where, args = append(where, cond), append(args, a...) }
	if len(f.Health) > 0 {
		hs := make([]any, len(f.Health))
		for i, h := range f.Health {
			hs[i] = string(h)
		}
		add("health IN ("+strings.TrimSuffix(strings.Repeat("?,", len(hs)), ",")+")", hs...)
	}
	switch {
	case f.Tag == "":
	case s.db.Dialect == sqldb.Postgres:
		b, _ := json.Marshal([]string{f.Tag})
		add("tags @> CAST(? AS JSONB)", string(b))
	default:
		add("EXISTS (SELECT 1 FROM json_each(threads.tags) j WHERE j.value = ?)", f.Tag)
	}
	if f.IDPrefix != "" {
		add(`id LIKE ? ESCAPE '\'`, likeEscape(strings.ToLower(f.IDPrefix))+"%")
	}
	if f.RefKey != "" || f.RefValue != "" {
		cond, a := "EXISTS (SELECT 1 FROM thread_refs r WHERE r.thread_id = threads.id", []any{}
		if f.RefKey != "" {
			cond, a = cond+" AND r.ref_key = ?", append(a, f.RefKey)
		}
		if f.RefValue != "" {
			cond, a = cond+` AND LOWER(r.ref_value) LIKE ? ESCAPE '\'`, append(a, "%"+likeEscape(strings.ToLower(f.RefValue))+"%")
		}
		add(cond+")", a...)
	}
	if f.IssueType != "" {
		add("first_issue_type = ?", f.IssueType)
	}
	if f.IssueStep != "" {
		add("first_issue_step = ?", f.IssueStep)
	}
	return where, args
}
