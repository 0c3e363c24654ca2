package threadquery

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
)

// contractStats reads contract_stats_total plus the rows of
// contract_stats_delta not folded into it yet (migration 00097): triggers on
// threads record every start, change of (contract, version, status,
// health) and delete as insert-only ±1 rows, whichever release writes the
// thread, and the roll-up job folds them into the totals (foldContractStats)
// in one statement. Both tables are read in one statement, one snapshot: a
// fold committing meanwhile is seen whole or not at all. The rows read are
// bounded by contracts × versions × statuses × health plus the changes since
// the last fold (a minute), not by the threads.
//
// The roll-up of ended threads of migration 00041 (contract_stats_rollup,
// rollUpContractStats below, threadstore.unrollContractStats) is no longer
// read by this release; it is kept up to date for the previous release's
// replicas during a rolling upgrade (they read it plus the threads in
// flight), and goes in a later release.

// ThreadsRollup is the stats_rollup row of the contract statistics.
const ThreadsRollup = "threads"

// contractStatsQuery counts threads per (contract version, status, health):
// the folded totals plus the deltas not folded yet.
const contractStatsQuery = `SELECT contract_name, contract_version, status, health, SUM(n) AS n FROM (
 SELECT contract_name, contract_version, status, health, threads AS n FROM contract_stats_total
 UNION ALL
 SELECT contract_name, contract_version, status, health, n FROM contract_stats_delta
) x GROUP BY contract_name, contract_version, status, health ORDER BY contract_name, contract_version DESC`

// foldContractStats moves the deltas into the totals. On PostgreSQL one
// statement deletes the delta rows it sees and adds exactly those: rows
// inserted meanwhile stay for the next fold, and a concurrent fold (another
// replica) waits on the rows this one deletes, then skips them. On SQLite
// the transaction is the only writer. Writers of threads never touch the
// totals, so they never wait on a fold or on each other.
//
// Then, in the same transaction, the totals brought to 0 go (a version
// whose threads all changed status or were deleted): kept, they would
// stay forever and grow the table with every key ever used. Readers skip
// a 0 count (ContractStats), so a missing row reads the same. On
// PostgreSQL the rows this fold zeroed are locked by it; a row another
// fold is changing is re-read once it commits and kept unless still 0.
func (s *Store) foldContractStats(ctx context.Context, tx *sqlx.Tx) error {
	if s.db.Dialect == sqldb.Postgres {
		if _, err := tx.ExecContext(ctx, `WITH gone AS (DELETE FROM contract_stats_delta RETURNING contract_name, contract_version, status, health, n)
 INSERT INTO contract_stats_total (contract_name, contract_version, status, health, threads)
 SELECT contract_name, contract_version, status, health, SUM(n) FROM gone GROUP BY contract_name, contract_version, status, health
 ON CONFLICT (contract_name, contract_version, status, health) DO UPDATE SET threads = contract_stats_total.threads + excluded.threads`); err != nil {
			return err
		}
		return s.dropZeroContractStats(ctx, tx)
	}
	var last sql.NullInt64
	if err := tx.GetContext(ctx, &last, `SELECT MAX(rowid) FROM contract_stats_delta`); err != nil || !last.Valid {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO contract_stats_total (contract_name, contract_version, status, health, threads)
 SELECT contract_name, contract_version, status, health, SUM(n) FROM contract_stats_delta WHERE rowid <= ?
 GROUP BY contract_name, contract_version, status, health
 ON CONFLICT (contract_name, contract_version, status, health) DO UPDATE SET threads = contract_stats_total.threads + excluded.threads`, last.Int64); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM contract_stats_delta WHERE rowid <= ?`, last.Int64); err != nil {
		return err
	}
	return s.dropZeroContractStats(ctx, tx)
}

// dropZeroContractStats deletes the totals at 0 (foldContractStats). The
// table holds a row per key with threads (at most 16 per contract version:
// status × health), so a scan of it costs less than naming the keys the
// fold touched.
func (s *Store) dropZeroContractStats(ctx context.Context, tx *sqlx.Tx) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM contract_stats_total WHERE threads = 0`)
	return err
}

// epoch stands for "nothing rolled up yet" (every ended thread is read raw).
var epoch = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)

// rollUpContractStats moves the threads that ended in [watermark, until)
// into the roll-up, at most RollupHoursPerCall hours of them (endedStep):
// more reports that some are left for the next call. It waits while any
// thread's health is still to be recomputed (health_version 0, the
// start-up backfill): such a thread's health may yet change.
func (s *Store) rollUpContractStats(ctx context.Context, tx *sqlx.Tx, until time.Time) (more bool, err error) {
	start, end, more, ok, err := s.endedWindow(ctx, tx, ThreadsRollup, until)
	if err != nil || !ok {
		return false, err
	}
	from, to := sqldb.Time(start), sqldb.Time(end)
	if _, err := tx.ExecContext(ctx, s.db.Rebind(`INSERT INTO contract_stats_rollup (contract_name, contract_version, status, health, threads)
 SELECT contract_name, COALESCE(contract_version, 0), status, health, COUNT(*) FROM threads
 WHERE contract_name IS NOT NULL AND settled_at >= ? AND settled_at < ?
 GROUP BY contract_name, COALESCE(contract_version, 0), status, health
 ON CONFLICT (contract_name, contract_version, status, health) DO UPDATE SET threads = contract_stats_rollup.threads + excluded.threads`),
		from, to); err != nil {
		return false, err
	}
	_, err = tx.ExecContext(ctx, s.db.Rebind(`UPDATE stats_rollup SET rolled_until = ? WHERE name = ?`), to, ThreadsRollup)
	return more, err
}

// endedWindow locks the watermark of the roll-up name (created at the epoch
// the first time) and gives the window [from, to) of ended threads this call
// moves into it (endedStep; more when some are left). ok is false when there
// is nothing to do: the watermark is at until already, or a thread's health
// is still to be recomputed (health_version 0, the start-up backfill), which
// may yet change it.
func (s *Store) endedWindow(ctx context.Context, tx *sqlx.Tx, name string, until time.Time) (from, to time.Time, more, ok bool, err error) {
	var w dbTime
	err = tx.GetContext(ctx, &w, s.db.Rebind(`SELECT rolled_until FROM stats_rollup WHERE name = ?`+s.db.ForUpdate()), name)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, s.db.Rebind(`INSERT INTO stats_rollup (name, rolled_until) VALUES (?, ?)`),
			name, sqldb.Time(epoch)); err != nil {
			return from, to, false, false, err
		}
		w = dbTime{T: epoch, Valid: true}
	case err != nil:
		return from, to, false, false, err
	}
	if !w.T.Before(until) {
		return from, to, false, false, nil
	}
	var pending []int
	if err := tx.SelectContext(ctx, &pending, `SELECT 1 FROM threads WHERE health_version = 0 LIMIT 1`); err != nil {
		return from, to, false, false, err
	}
	if len(pending) > 0 {
		return from, to, false, false, nil
	}
	to, more, err = s.endedStep(ctx, tx, w.T.UTC(), until)
	return w.T, to, more, err == nil, err
}

// endedStep is where one call of a roll-up keyed on the time threads ended
// (updated_at of threads not active: the contract statistics, the Problems
// view) moves its watermark w towards until: RollupHoursPerCall hours past
// the first thread ended since w (the hours before it hold none, so a
// roll-up starting at the epoch, or after a long stop, skips them), or
// until if that is nearer; more is true when it stops before until. A
// catch-up after an upgrade that reset a roll-up (migration 00092) or a
// long stop thus reads a day of ended threads per transaction, not the
// whole history in one. The first ended thread is an index lookup
// (threads_settled: an ended thread's updated_at, migration 00106).
func (s *Store) endedStep(ctx context.Context, tx *sqlx.Tx, w, until time.Time) (end time.Time, more bool, err error) {
	var next dbTime
	if err := tx.GetContext(ctx, &next, s.db.Rebind(`SELECT MIN(settled_at) FROM threads WHERE settled_at >= ?`),
		sqldb.Time(w)); err != nil {
		return time.Time{}, false, err
	}
	if !next.Valid || !next.T.Before(until) {
		return until, false, nil
	}
	start := next.T.UTC().Truncate(time.Hour)
	if start.Before(w) {
		start = w
	}
	end = start.Add(RollupHoursPerCall * time.Hour)
	if !end.Before(until) {
		return until, false, nil
	}
	return end, true, nil
}
