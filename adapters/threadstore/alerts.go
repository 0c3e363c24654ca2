package threadstore

import (
	"context"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

var _ ports.AlertSweepStore = (*Store)(nil)

// OverdueThreads: see ports.AlertSweepStore (index threads_contract).
func (s *Store) OverdueThreads(ctx context.Context, contract string, version int, startedAfter, startedBefore time.Time, limit int) ([]string, error) {
	var ids []string
	err := s.db.SelectContext(ctx, &ids, s.q(`SELECT t.id FROM threads t WHERE t.contract_name = ? AND t.contract_version = ?
 AND t.created_at < ? AND t.created_at >= ? AND t.status = 'active'
 AND NOT EXISTS (SELECT 1 FROM thread_alerts a WHERE a.thread_id = t.id AND a.condition = 'overdue')
 ORDER BY t.created_at LIMIT ?`), contract, version, sqldb.Time(startedBefore), sqldb.Time(startedAfter), limit)
	return ids, sqldb.TranslateError(err)
}

// SilentThreads: see ports.AlertSweepStore (index threads_active_minute:
// the minutes of the window's ends bound the range, updated_at itself is
// compared on the rows found; a thread's updated_at is the time of its last
// step or update, so a silence flagged before the thread's last update does
// not count).
func (s *Store) SilentThreads(ctx context.Context, updatedAfter, updatedBefore time.Time, limit int) ([]string, error) {
	var ids []string
	err := s.db.SelectContext(ctx, &ids, s.q(silentThreadsQuery), sqldb.Minute(updatedAfter), sqldb.Minute(updatedBefore),
		sqldb.Time(updatedBefore), sqldb.Time(updatedAfter), limit)
	return ids, sqldb.TranslateError(err)
}

// silentThreadsQuery: SilentThreads' statement (its plan is tested).
const silentThreadsQuery = `SELECT t.id FROM threads t WHERE t.active_minute >= ? AND t.active_minute <= ?
 AND t.updated_at < ? AND t.updated_at >= ? AND NOT EXISTS (SELECT 1 FROM thread_alerts a WHERE a.thread_id = t.id AND a.condition = 'silent'
 AND a.episode >= t.updated_at)
 ORDER BY t.active_minute, t.updated_at LIMIT ?`

var errAlreadyFlagged = errors.New("thread alert already recorded")

// RecordThreadAlert: see ports.AlertSweepStore. The thread row lock orders
// it with appends; the thread_alerts primary key and the episode guard on
// the upsert make the flag once per episode, whichever replica gets there
// first.
func (s *Store) RecordThreadAlert(ctx context.Context, threadID, condition string,
	fn func(t *domain.Thread) (ports.ThreadAlert, bool)) (bool, error) {
	recorded := false
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		recorded = false
		th, err := s.lockThread(ctx, tx, threadID)
		if err != nil {
			return err
		}
		alert, ok := fn(&th)
		if !ok {
			return nil
		}
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO thread_alerts (thread_id, condition, created_at, episode) VALUES (?,?,?,?)
 ON CONFLICT (thread_id, condition) DO UPDATE SET created_at = excluded.created_at, episode = excluded.episode
 WHERE thread_alerts.episode IS NULL OR thread_alerts.episode < excluded.episode`),
			threadID, condition, sqldb.Time(alert.Validation.CreatedAt), sqldb.Time(alert.Episode))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return sqldb.CallerError(errAlreadyFlagged)
		}
		v := alert.Validation
		issues := v.Issues
		if issues == nil {
			issues = []any{}
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO thread_validations (id, thread_id, step_id, step_name,
 idempotency_key, overall_status, issues, critical_count, warning_count, minor_count, info_count, created_at)
 VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`), v.ID, threadID, v.StepID, v.StepName, v.IdempotencyKey, v.OverallStatus,
			jsonText(issues), v.CriticalCount, v.WarningCount, v.MinorCount, v.InfoCount, sqldb.Time(v.CreatedAt)); err != nil {
			return err
		}
		if err := s.writeThread(ctx, tx, th); err != nil {
			return err
		}
		if err := s.insertNotifications(ctx, tx, alert.Notifications); err != nil {
			return err
		}
		recorded = true
		return nil
	})
	if errors.Is(err, errAlreadyFlagged) {
		return false, nil
	}
	return recorded, sqldb.TranslateError(err)
}

// QuietTraceThreads: see ports.QuietTraces (index
// threads_trace_quiet_minute; active_minute is NULL once a thread ended).
func (s *Store) QuietTraceThreads(ctx context.Context, updatedBefore time.Time, limit int) ([]string, error) {
	var ids []string
	err := s.db.SelectContext(ctx, &ids, s.q(quietTraceThreadsQuery), sqldb.Minute(updatedBefore), sqldb.Time(updatedBefore), limit)
	return ids, sqldb.TranslateError(err)
}

// quietTraceThreadsQuery: QuietTraceThreads' statement (its plan is tested).
const quietTraceThreadsQuery = `SELECT id FROM threads WHERE trace_root_ended_at IS NOT NULL
 AND active_minute <= ? AND updated_at < ? ORDER BY active_minute, updated_at LIMIT ?`
