package identitystore

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

var _ ports.AuditReader = (*Store)(nil)

type auditRow struct {
	ID        string    `db:"id"`
	At        time.Time `db:"at"`
	ActorKind string    `db:"actor_kind"`
	ActorID   string    `db:"actor_id"`
	Action    string    `db:"action"`
	Target    string    `db:"target"`
	Details   string    `db:"details"`
}

// ListAudit: see ports.AuditReader. Pages are keyset-paginated on (at, id),
// so a page costs the same however deep it is.
func (s *Store) ListAudit(ctx context.Context, f ports.AuditFilter) ([]ports.AuditEntry, error) {
	var where []string
	var args []any
	if f.Action != "" {
		if strings.HasSuffix(f.Action, ".") {
			// A prefix: escape LIKE's wildcards in it.
			esc := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(f.Action)
			where, args = append(where, `action LIKE ? ESCAPE '\'`), append(args, esc+"%")
		} else {
			where, args = append(where, "action = ?"), append(args, f.Action)
		}
	}
	if f.ActorID != "" {
		where, args = append(where, "actor_id = ?"), append(args, f.ActorID)
	}
	if f.Target != "" {
		where, args = append(where, "target = ?"), append(args, f.Target)
	}
	if !f.Since.IsZero() {
		where, args = append(where, "at >= ?"), append(args, sqldb.Time(f.Since))
	}
	if !f.Until.IsZero() {
		where, args = append(where, "at < ?"), append(args, sqldb.Time(f.Until))
	}
	if f.After != nil {
		at := sqldb.Time(f.After.At)
		where, args = append(where, "(at < ? OR (at = ? AND id < ?))"), append(args, at, at, f.After.ID)
	}
	q := `SELECT id, at, actor_kind, actor_id, action, target, CAST(details AS TEXT) AS details FROM audit_log`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY at DESC, id DESC LIMIT ?"
	args = append(args, f.Limit)
	var rows []auditRow
	if err := s.db.SelectContext(ctx, &rows, s.q(q), args...); err != nil {
		return nil, sqldb.TranslateError(err)
	}
	out := make([]ports.AuditEntry, len(rows))
	for i, r := range rows {
		out[i] = ports.AuditEntry{ID: r.ID, At: r.At.UTC(), ActorKind: domain.PrincipalKind(r.ActorKind), ActorID: r.ActorID,
			Action: r.Action, Target: r.Target}
		_ = json.Unmarshal([]byte(r.Details), &out[i].Details)
	}
	return out, nil
}

var _ ports.AuditPruner = (*Store)(nil)

// PruneAudit: see ports.AuditPruner. One statement per call, through the
// audit_log_at index, so a sweep deletes in bounded transactions.
func (s *Store) PruneAudit(ctx context.Context, before time.Time, limit int) (int, error) {
	res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM audit_log WHERE id IN
 (SELECT id FROM audit_log WHERE at < ? ORDER BY at LIMIT ?)`), sqldb.Time(before), limit)
	if err != nil {
		return 0, sqldb.TranslateError(err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
