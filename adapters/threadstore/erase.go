package threadstore

import (
	"context"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

var _ ports.ThreadEraser = (*Store)(nil)

// threadTables are the tables holding a thread's rows, children before
// parents (sub-steps reference activities; everything references threads).
// A table added with a thread_id column belongs here: the storage test fails
// until it is (it looks for rows of a deleted thread in every such table).
var threadTables = []string{"thread_tags", "step_substeps", "thread_validations", "thread_notifications", "thread_step_states",
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
		in, args := s.inIDs("id", ids)
		var rows []threadRow
		if err := tx.SelectContext(ctx, &rows, s.q(`SELECT `+threadCols+` FROM threads WHERE `+in+` ORDER BY id`+s.db.ForUpdate()), args...); err != nil {
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
		if err := s.unrollContractStats(ctx, tx, found); err != nil {
			return err
		}
		if err := s.unrollProblems(ctx, tx, found); err != nil {
			return err
		}
		if err := s.clearMapExamples(ctx, tx, out); err != nil {
			return err
		}
		// On PostgreSQL the children's foreign keys to threads are gone
		// (migration 00094: every writer of those tables holds the thread's
		// row lock, taken above here); a statement trigger on threads still
		// refuses to delete a thread whose rows remain, unless the deleting
		// transaction says it deleted them, as this one does table by table.
		if s.db.Dialect == sqldb.Postgres {
			if _, err := tx.ExecContext(ctx, `SELECT set_config('threadengine.children_deleted', 'on', true)`); err != nil {
				return err
			}
		}
		for _, table := range append(threadTables, "threads") {
			col := "thread_id"
			if table == "threads" {
				col = "id"
			}
			in, args := s.inIDs(col, found)
			if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM `+table+` WHERE `+in), args...); err != nil {
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

// inIDs is the condition "col is one of ids" and its arguments, with ?
// placeholders (rebind the whole statement): on PostgreSQL one array
// parameter (col = ANY(?)), so a batch of any size is one short statement
// the server plans once; on SQLite an IN list (retention.batch_size bounds
// it far below SQLite's parameter limit).
func (s *Store) inIDs(col string, ids []string) (string, []any) {
	if s.db.Dialect == sqldb.Postgres {
		return col + ` = ANY(?)`, []any{pq.Array(ids)}
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return col + ` IN (` + strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",") + `)`, args
}

type rolledRow struct {
	Name    string `db:"contract_name"`
	Version int    `db:"contract_version"`
	Status  string `db:"status"`
	Health  string `db:"health"`
	N       int    `db:"n"`
}

// unrollContractStats subtracts, from the contract statistics roll-up
// (migration 00041, threadquery/contract_rollup.go), the threads about to be
// deleted that it counts: those that ended (in the engine: updated_at, the
// roll-up's key) before its watermark. The
// watermark row is locked first, so a roll-up cannot pass these threads
// between this read and the delete's commit. This release's contractStats
// reads contract_stats_total and the delta rows the DELETE's own trigger
// writes (migration 00097); this subtraction keeps the older roll-up right
// for the previous release's replicas during a rolling upgrade.
func (s *Store) unrollContractStats(ctx context.Context, tx *sqlx.Tx, ids []string) error {
	var w []time.Time
	if err := tx.SelectContext(ctx, &w, s.q(`SELECT rolled_until FROM stats_rollup WHERE name = 'threads'`+s.db.ForUpdate())); err != nil {
		return err
	}
	if len(w) == 0 {
		return nil
	}
	in, args := s.inIDs("id", ids)
	var rows []rolledRow
	if err := tx.SelectContext(ctx, &rows, s.q(`SELECT contract_name, COALESCE(contract_version, 0) AS contract_version, status, health, COUNT(*) AS n
 FROM threads WHERE contract_name IS NOT NULL AND status <> 'active' AND updated_at < ? AND `+in+`
 GROUP BY contract_name, COALESCE(contract_version, 0), status, health`), append([]any{sqldb.Time(w[0])}, args...)...); err != nil {
		return err
	}
	for _, r := range rows {
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE contract_stats_rollup SET threads = threads - ?
 WHERE contract_name = ? AND contract_version = ? AND status = ? AND health = ?`), r.N, r.Name, r.Version, r.Status, r.Health); err != nil {
			return err
		}
	}
	return nil
}

// ExpiredThreads' statements (their plans are tested): the oldest ended
// threads, and the oldest idle active ones.
const (
	expiredEndedQuery = `SELECT id FROM threads WHERE settled_at < ? ORDER BY settled_at LIMIT ?`
	expiredIdleQuery  = `SELECT id FROM threads WHERE active_minute <= ? AND updated_at < ?
 ORDER BY active_minute, updated_at LIMIT ?`
)

// ExpiredThreads: see ports.ThreadEraser. A thread's updated_at is the time
// of its last step or of its end; settled_at is it for an ended thread
// (index threads_settled), active_minute its minute for an active one
// (threads_active_minute, migration 00106).
func (s *Store) ExpiredThreads(ctx context.Context, endedBefore, idleBefore time.Time, limit int) ([]string, error) {
	var ids []string
	if !endedBefore.IsZero() {
		if err := s.db.SelectContext(ctx, &ids, s.q(expiredEndedQuery), sqldb.Time(endedBefore), limit); err != nil {
			return nil, sqldb.TranslateError(err)
		}
	}
	if !idleBefore.IsZero() && len(ids) < limit {
		var idle []string
		if err := s.db.SelectContext(ctx, &idle, s.q(expiredIdleQuery), sqldb.Minute(idleBefore), sqldb.Time(idleBefore), limit-len(ids)); err != nil {
			return nil, sqldb.TranslateError(err)
		}
		ids = append(ids, idle...)
	}
	return ids, nil
}
