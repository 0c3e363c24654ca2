package threadstore

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

var _ ports.ThreadEraser = (*Store)(nil)

// threadTables are the tables holding a thread's rows, children before
// parents (sub-steps reference activities; everything references threads).
// A table added with a thread_id column belongs here: the storage test fails
// until it is (it looks for rows of a deleted thread in every such table).
var threadTables = []string{"step_substeps", "thread_validations", "thread_notifications", "thread_step_states",
	"thread_activities", "thread_refs", "thread_access", "thread_keys", "step_grants", "thread_alerts", "webhook_deliveries",
	"step_refusals"}

// DeleteThreads: see ports.ThreadEraser. The thread rows are locked first,
// so a concurrent append either commits before the delete (and its rows
// are deleted too) or finds the thread gone.
func (s *Store) DeleteThreads(ctx context.Context, ids []string) ([]domain.Thread, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var out []domain.Thread
	reason := ports.DeletionReason(ctx)
	err := s.logTx(ctx, true, func(tx *sqlx.Tx) error {
		out = out[:0]
		q, args, err := sqlx.In(`SELECT `+threadCols+` FROM threads WHERE id IN (?) ORDER BY id`+s.db.ForUpdate(), ids)
		if err != nil {
			return err
		}
		var rows []threadRow
		if err := tx.SelectContext(ctx, &rows, s.q(q), args...); err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		found := make([]string, len(rows))
		for i, r := range rows {
			found[i] = r.ID
			out = append(out, r.record())
		}
		for _, table := range append(threadTables, "threads") {
			col := "thread_id"
			if table == "threads" {
				col = "id"
			}
			q, args, err := sqlx.In(`DELETE FROM `+table+` WHERE `+col+` IN (?)`, found)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, s.q(q), args...); err != nil {
				return err
			}
		}
		// Each deleted thread leaves a tombstone in the transparency log.
		return s.AppendTombstones(ctx, tx, out, reason, time.Now())
	})
	if err != nil {
		return nil, sqldb.TranslateError(err)
	}
	return out, nil
}

// ExpiredThreads: see ports.ThreadEraser. A thread's updated_at is the time
// of its last step or of its end.
func (s *Store) ExpiredThreads(ctx context.Context, endedBefore, idleBefore time.Time, limit int) ([]string, error) {
	var ids []string
	if !endedBefore.IsZero() {
		if err := s.db.SelectContext(ctx, &ids, s.q(`SELECT id FROM threads WHERE status <> 'active' AND updated_at < ?
 ORDER BY updated_at LIMIT ?`), sqldb.Time(endedBefore), limit); err != nil {
			return nil, sqldb.TranslateError(err)
		}
	}
	if !idleBefore.IsZero() && len(ids) < limit {
		var idle []string
		if err := s.db.SelectContext(ctx, &idle, s.q(`SELECT id FROM threads WHERE status = 'active' AND updated_at < ?
 ORDER BY updated_at LIMIT ?`), sqldb.Time(idleBefore), limit-len(ids)); err != nil {
			return nil, sqldb.TranslateError(err)
		}
		ids = append(ids, idle...)
	}
	return ids, nil
}
