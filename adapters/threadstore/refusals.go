package threadstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/ports"
)

var (
	_ ports.RefusalLog    = (*Store)(nil)
	_ ports.RefusalReader = (*Store)(nil)
)

type refusalRow struct {
	ID              string    `db:"id"`
	ThreadID        string    `db:"thread_id"`
	ContractName    string    `db:"contract_name"`
	ContractVersion int       `db:"contract_version"`
	StepName        string    `db:"step_name"`
	IdempotencyKey  string    `db:"idempotency_key"`
	PrincipalID     string    `db:"principal_id"`
	Role            string    `db:"role"`
	Code            string    `db:"code"`
	Field           string    `db:"field"`
	Rule            string    `db:"rule"`
	Message         string    `db:"message"`
	Context         string    `db:"context"`
	CreatedAt       time.Time `db:"created_at"`
}

// LogRefusal: see ports.RefusalLog.
func (s *Store) LogRefusal(ctx context.Context, r ports.StepRefusal) error {
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		return s.exec(ctx, tx, `INSERT INTO step_refusals (id, thread_id, contract_name, contract_version, step_name,
 idempotency_key, principal_id, role, code, field, rule, message, context, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
			r.ID, r.ThreadID, r.ContractName, r.ContractVersion, r.StepName, r.IdempotencyKey, r.PrincipalID, r.Role,
			r.Code, r.Field, r.Rule, r.Message, jsonText(r.Context), sqldb.Time(r.CreatedAt))
	})
	return sqldb.TranslateError(err)
}

// PruneRefusals: see ports.RefusalLog.
func (s *Store) PruneRefusals(ctx context.Context, cutoff time.Time, maxRows int) (int64, error) {
	var n int64
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM step_refusals WHERE created_at < ?`), sqldb.Time(cutoff))
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		// Past maxRows, the oldest go (by the created_at index).
		res, err = tx.ExecContext(ctx, s.q(`DELETE FROM step_refusals WHERE created_at <
 (SELECT created_at FROM step_refusals ORDER BY created_at DESC LIMIT 1 OFFSET ?)`), maxRows-1)
		if err != nil {
			return err
		}
		more, err := res.RowsAffected()
		n += more
		return err
	})
	return n, sqldb.TranslateError(err)
}

// ListRefusals: see ports.RefusalReader. Newest first, by the created_at
// index (or the thread's).
func (s *Store) ListRefusals(ctx context.Context, f ports.RefusalFilter) ([]ports.StepRefusal, error) {
	q := `SELECT id, thread_id, contract_name, contract_version, step_name, idempotency_key, principal_id, role, code,
 field, rule, message, context, created_at FROM step_refusals WHERE 1 = 1`
	var args []any
	if f.ThreadID != "" {
		q += ` AND thread_id = ?`
		args = append(args, f.ThreadID)
	}
	if f.Contract != "" {
		q += ` AND contract_name = ?`
		args = append(args, f.Contract)
	}
	if !f.Before.IsZero() {
		q += ` AND (created_at < ? OR created_at = ? AND id < ?)`
		args = append(args, sqldb.Time(f.Before), sqldb.Time(f.Before), f.BeforeID)
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, f.Limit)
	var rows []refusalRow
	if err := sqlx.SelectContext(ctx, s.db, &rows, s.q(q), args...); err != nil {
		return nil, sqldb.TranslateError(err)
	}
	out := make([]ports.StepRefusal, len(rows))
	for i, r := range rows {
		out[i] = ports.StepRefusal{ID: r.ID, ThreadID: r.ThreadID, ContractName: r.ContractName, ContractVersion: r.ContractVersion,
			StepName: r.StepName, IdempotencyKey: r.IdempotencyKey, PrincipalID: r.PrincipalID, Role: r.Role, Code: r.Code,
			Field: r.Field, Rule: r.Rule, Message: r.Message, CreatedAt: r.CreatedAt.UTC()}
		_ = json.Unmarshal([]byte(r.Context), &out[i].Context)
	}
	return out, nil
}
