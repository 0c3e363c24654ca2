package threadquery

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
)

// contractStats reads a roll-up (migration 00041): the threads of each
// contract version by status and health, for the threads that ended before
// stats_rollup 'threads'.rolled_until. An ended thread never changes its
// contract, status, health or updated_at again, so it is counted once, when
// the roll-up passes its end; the threads still active or ended since are
// counted from threads (a few per cent of them: what is in flight, not
// history). "Ended" is updated_at, the time the thread ended in the engine,
// not completed_at: a trace thread's completed_at is its last span's end,
// which can be behind the watermark when it ends (an exporter that batched
// for minutes), and would then be counted by neither half. Both halves are
// bounded by the watermark read in the same statement, so a roll-up
// committing meanwhile neither loses nor double-counts a thread. Deleting
// an ended thread (retention, erasure) subtracts it in the delete's
// transaction (threadstore.unrollContractStats), by the same key.

// ThreadsRollup is the stats_rollup row of the contract statistics.
const ThreadsRollup = "threads"

// contractStatsQuery counts threads per (contract version, status, health):
// the roll-up plus the threads it does not hold yet.
const contractStatsQuery = `SELECT contract_name, contract_version, status, health, SUM(n) AS n FROM (
 SELECT contract_name, contract_version, status, health, threads AS n FROM contract_stats_rollup WHERE threads <> 0
 UNION ALL
 SELECT contract_name, COALESCE(contract_version, 0), status, health, COUNT(*) FROM threads
 WHERE contract_name IS NOT NULL AND status = 'active' GROUP BY contract_name, COALESCE(contract_version, 0), status, health
 UNION ALL
 SELECT contract_name, COALESCE(contract_version, 0), status, health, COUNT(*) FROM threads
 WHERE contract_name IS NOT NULL AND status <> 'active'
 AND updated_at >= COALESCE((SELECT rolled_until FROM stats_rollup WHERE name = 'threads'), ?)
 GROUP BY contract_name, COALESCE(contract_version, 0), status, health
) x GROUP BY contract_name, contract_version, status, health ORDER BY contract_name, contract_version DESC`

// epoch stands for "nothing rolled up yet" (every ended thread is read raw).
var epoch = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)

// rollUpContractStats moves the threads that ended in [watermark, until)
// into the roll-up. It waits while any thread's health is still to be
// recomputed (health_version 0, the start-up backfill): such a thread's
// health may yet change.
func (s *Store) rollUpContractStats(ctx context.Context, tx *sqlx.Tx, until time.Time) error {
	var w dbTime
	err := tx.GetContext(ctx, &w, s.db.Rebind(`SELECT rolled_until FROM stats_rollup WHERE name = ?`+s.db.ForUpdate()), ThreadsRollup)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, s.db.Rebind(`INSERT INTO stats_rollup (name, rolled_until) VALUES (?, ?)`),
			ThreadsRollup, sqldb.Time(epoch)); err != nil {
			return err
		}
		w = dbTime{T: epoch, Valid: true}
	case err != nil:
		return err
	}
	if !w.T.Before(until) {
		return nil
	}
	var pending []int
	if err := tx.SelectContext(ctx, &pending, `SELECT 1 FROM threads WHERE health_version = 0 LIMIT 1`); err != nil {
		return err
	}
	if len(pending) > 0 {
		return nil
	}
	from, to := sqldb.Time(w.T), sqldb.Time(until)
	if _, err := tx.ExecContext(ctx, s.db.Rebind(`INSERT INTO contract_stats_rollup (contract_name, contract_version, status, health, threads)
 SELECT contract_name, COALESCE(contract_version, 0), status, health, COUNT(*) FROM threads
 WHERE contract_name IS NOT NULL AND status <> 'active' AND updated_at >= ? AND updated_at < ?
 GROUP BY contract_name, COALESCE(contract_version, 0), status, health
 ON CONFLICT (contract_name, contract_version, status, health) DO UPDATE SET threads = contract_stats_rollup.threads + excluded.threads`),
		from, to); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, s.db.Rebind(`UPDATE stats_rollup SET rolled_until = ? WHERE name = ?`), to, ThreadsRollup)
	return err
}
