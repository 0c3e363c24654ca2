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
// every page costs the same.
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
