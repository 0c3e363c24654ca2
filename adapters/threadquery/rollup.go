package threadquery

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/ports"
)

// Per-step counts per hour (step_stats_hourly, migration 00013) are rolled up
// from the raw rows once an hour has ended plus RollupLag, so no transaction
// still writing into that hour can be missed. stats_rollup.rolled_until is
// the first hour not rolled up: the aggregates read rolled-up rows before it
// and raw rows from it on, both bounded by the same value, so a roll-up
// running at the same time neither loses nor double-counts a step.

// RollupLag is how long after an hour ends it is rolled up; appends commit
// within seconds (group commits time out after 30 s).
const RollupLag = 5 * time.Minute

// RollupHoursPerCall bounds one RollUp call (a catch-up after an upgrade or
// a long stop proceeds a day per call).
const RollupHoursPerCall = 24

const rollupName = "steps"

// rolledUntil reads the roll-up watermark; ok is false before the first
// roll-up (everything is then read raw).
func (s *Store) rolledUntil(ctx context.Context) (time.Time, bool, error) {
	var t dbTime
	err := s.db.GetContext(ctx, &t, s.db.Rebind(`SELECT rolled_until FROM stats_rollup WHERE name = ?`), rollupName)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, sqldb.TranslateError(err)
	}
	return t.T.UTC(), true, nil
}

// RollUp rolls up the ended hours not rolled up yet (at most
// RollupHoursPerCall), and reports how many it rolled up. Safe to run on
// several replicas at once: the watermark row is locked.
func (s *Store) RollUp(ctx context.Context, now time.Time) (int, error) {
	n, _, err := s.rollUp(ctx, now)
	return n, err
}

// CatchUp rolls up until every roll-up has caught up with now (what
// RunRollup does over its first calls), as a seeding tool needs.
func (s *Store) CatchUp(ctx context.Context, now time.Time) error {
	for {
		_, more, err := s.rollUp(ctx, now)
		if err != nil || !more {
			return err
		}
	}
}

// rollUp is RollUp, also reporting whether any of the roll-ups has more to
// catch up (the contract statistics and the Problems view move a day of
// ended threads per call too).
func (s *Store) rollUp(ctx context.Context, now time.Time) (int, bool, error) {
	limit := now.UTC().Add(-RollupLag).Truncate(time.Hour)
	n, more := 0, false
	err := s.db.Tx(ctx, func(tx *sqlx.Tx) error {
		n, more = 0, false
		var w dbTime
		err := tx.GetContext(ctx, &w, s.db.Rebind(`SELECT rolled_until FROM stats_rollup WHERE name = ?`+s.db.ForUpdate()), rollupName)
		if errors.Is(err, sql.ErrNoRows) {
			// First run: start at the hour of the oldest attempt.
			var first dbTime
			if err := tx.GetContext(ctx, &first, `SELECT MIN(recorded_at) FROM thread_activities`); err != nil {
				return err
			}
			start := limit
			if first.Valid && first.T.Before(start) {
				start = first.T.UTC().Truncate(time.Hour)
			}
			// A concurrent first run inserts the same row: the loser
			// rolls back and rolls up next time.
			if _, err := tx.ExecContext(ctx, s.db.Rebind(`INSERT INTO stats_rollup (name, rolled_until) VALUES (?, ?)`), rollupName, sqldb.Time(start)); err != nil {
				return err
			}
			w = dbTime{T: start, Valid: true}
		} else if err != nil {
			return err
		}
		// The contract statistics' deltas (contract_rollup.go), every call.
		if err := s.foldContractStats(ctx, tx); err != nil {
			return err
		}
		// The previous release's roll-up of them rolls forward in the same transaction, to
		// the same lag (contract_rollup.go).
		contracts, err := s.rollUpContractStats(ctx, tx, now.UTC().Add(-RollupLag))
		if err != nil {
			return err
		}
		// And the Problems view's (problems.go), after it: a delete locks
		// the two watermarks in this order too.
		problems, err := s.rollUpProblems(ctx, tx, now.UTC().Add(-RollupLag))
		if err != nil {
			return err
		}
		more = contracts || problems
		h := w.T.UTC()
		for ; h.Before(limit) && n < RollupHoursPerCall; h = h.Add(time.Hour) {
			if err := s.rollUpHour(ctx, tx, h); err != nil {
				return err
			}
			n++
		}
		if n == 0 {
			return nil
		}
		more = more || n == RollupHoursPerCall
		// Once an hour (when an hour was rolled up): the process map's hour
		// rows before ports.ProcessMapHourlyPruned go; their counts stay in
		// process_map_daily (issue 28: the hour rows were most of the
		// roll-up's space, and only windows' recent ends read them).
		// The stats_rollup row ProcessMapPruned records the bound, which
		// the day rows' rebuild respects.
		if err := s.pruneProcessMapHours(ctx, tx, ports.ProcessMapHourlyPruned(now)); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.db.Rebind(`UPDATE stats_rollup SET rolled_until = ? WHERE name = ?`), sqldb.Time(h), rollupName)
		return err
	})
	if err != nil {
		return 0, false, sqldb.TranslateError(err)
	}
	return n, more, nil
}

// hourRow is one step_stats_hourly row's key and counts.
type hourStatRow struct {
	Name     string `db:"contract_name"`
	Version  int    `db:"contract_version"`
	Step     string `db:"step_name"`
	Attempts int64  `db:"attempts"`
	Failed   int64  `db:"failed"`
	Violated int64  `db:"violated"`
	Warnings int64  `db:"warnings"`
}

func (s *Store) hourRows(ctx context.Context, tx *sqlx.Tx, h time.Time) (map[[3]any]hourStatRow, error) {
	var rows []hourStatRow
	if err := tx.SelectContext(ctx, &rows, s.db.Rebind(`SELECT contract_name, contract_version, step_name, attempts, failed, violated, warnings
 FROM step_stats_hourly WHERE hour = ?`), sqldb.Time(h)); err != nil {
		return nil, err
	}
	m := make(map[[3]any]hourStatRow, len(rows))
	for _, r := range rows {
		m[[3]any{r.Name, r.Version, r.Step}] = r
	}
	return m, nil
}

// rollUpHour writes one hour's rows (idempotent: a re-run overwrites them)
// and adds what they changed to step_stats_total (migration 00042).
func (s *Store) rollUpHour(ctx context.Context, tx *sqlx.Tx, h time.Time) error {
	before, err := s.hourRows(ctx, tx, h)
	if err != nil {
		return err
	}
	from, to := sqldb.Time(h), sqldb.Time(h.Add(time.Hour))
	hour := "?"
	if s.db.Dialect == sqldb.Postgres {
		hour = "CAST(? AS TIMESTAMPTZ)"
	}
	for _, q := range []string{
		`INSERT INTO step_stats_hourly (hour, contract_name, contract_version, step_name, attempts, failed, violated, warnings)
 SELECT ` + hour + `, COALESCE(t.contract_name, ''), COALESCE(t.contract_version, 0), a.step_name, COUNT(*),
 SUM(CASE WHEN a.status IN ('failed','error') THEN 1 ELSE 0 END), 0, 0
 FROM thread_activities a JOIN threads t ON t.id = a.thread_id WHERE a.recorded_at >= ? AND a.recorded_at < ?
 GROUP BY COALESCE(t.contract_name, ''), COALESCE(t.contract_version, 0), a.step_name
 ON CONFLICT (hour, contract_name, contract_version, step_name) DO UPDATE SET attempts = excluded.attempts, failed = excluded.failed`,
		`INSERT INTO step_stats_hourly (hour, contract_name, contract_version, step_name, attempts, failed, violated, warnings)
 SELECT ` + hour + `, COALESCE(t.contract_name, ''), COALESCE(t.contract_version, 0), v.step_name, 0, 0,
 SUM(CASE WHEN v.overall_status = 'violated' THEN 1 ELSE 0 END), SUM(CASE WHEN v.overall_status = 'warning' THEN 1 ELSE 0 END)
 FROM thread_validations v JOIN threads t ON t.id = v.thread_id WHERE v.created_at >= ? AND v.created_at < ?
 GROUP BY COALESCE(t.contract_name, ''), COALESCE(t.contract_version, 0), v.step_name
 ON CONFLICT (hour, contract_name, contract_version, step_name) DO UPDATE SET violated = excluded.violated, warnings = excluded.warnings`,
	} {
		if _, err := tx.ExecContext(ctx, s.db.Rebind(q), from, from, to); err != nil {
			return err
		}
	}
	after, err := s.hourRows(ctx, tx, h)
	if err != nil {
		return err
	}
	// The hour's changes go into the totals in multi-row statements (one
	// per 100 steps), not a statement per step: a catch-up of a month of
	// hours is thousands of round trips fewer.
	var vals []string
	var args []any
	flush := func() error {
		if len(vals) == 0 {
			return nil
		}
		_, err := tx.ExecContext(ctx, s.db.Rebind(`INSERT INTO step_stats_total (contract_name, contract_version, step_name, attempts, failed, violated, warnings)
 VALUES `+strings.Join(vals, ", ")+` ON CONFLICT (contract_name, contract_version, step_name) DO UPDATE SET
 attempts = step_stats_total.attempts + excluded.attempts, failed = step_stats_total.failed + excluded.failed,
 violated = step_stats_total.violated + excluded.violated, warnings = step_stats_total.warnings + excluded.warnings`), args...)
		vals, args = vals[:0], args[:0]
		return err
	}
	for k, a := range after {
		b := before[k]
		d := hourStatRow{Name: a.Name, Version: a.Version, Step: a.Step, Attempts: a.Attempts - b.Attempts,
			Failed: a.Failed - b.Failed, Violated: a.Violated - b.Violated, Warnings: a.Warnings - b.Warnings}
		if d.Attempts == 0 && d.Failed == 0 && d.Violated == 0 && d.Warnings == 0 {
			continue
		}
		vals = append(vals, "(?, ?, ?, ?, ?, ?, ?)")
		args = append(args, d.Name, d.Version, d.Step, d.Attempts, d.Failed, d.Violated, d.Warnings)
		if len(vals) == 100 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// RunRollup rolls up every interval until ctx ends (catching up a day per
// tick), logging nothing: an error is retried at the next tick and the
// aggregates stay exact meanwhile (they read raw rows past the watermark).
func (s *Store) RunRollup(ctx context.Context, interval time.Duration, now func() time.Time) {
	if interval <= 0 {
		interval = time.Minute
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if _, more, err := s.rollUp(ctx, now()); err == nil && more && ctx.Err() == nil {
			continue // more to catch up
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// RebuildStepStatsTotal recomputes step_stats_total from the hourly rows
// rolled up so far (those before the watermark) and returns how many rows
// it wrote. It repairs the totals after replicas of a release before
// migration 00042 rolled hours up without adding them (a rolling upgrade),
// or after a contract version's deletion removed its hourly rows. The
// watermark row is locked, so a roll-up running meanwhile waits and then
// adds its hours to the rebuilt totals.
func (s *Store) RebuildStepStatsTotal(ctx context.Context) (int, error) {
	var n int64
	err := s.db.Tx(ctx, func(tx *sqlx.Tx) error {
		var w dbTime
		err := tx.GetContext(ctx, &w, s.db.Rebind(`SELECT rolled_until FROM stats_rollup WHERE name = ?`+s.db.ForUpdate()), rollupName)
		if errors.Is(err, sql.ErrNoRows) {
			w = dbTime{T: epoch, Valid: true} // nothing rolled up yet
		} else if err != nil {
			return err
		}
		n, err = refill(ctx, tx, "step_stats_total", s.db.Rebind(`INSERT INTO step_stats_total (contract_name, contract_version, step_name, attempts, failed, violated, warnings)
 SELECT contract_name, contract_version, step_name, SUM(attempts), SUM(failed), SUM(violated), SUM(warnings)
 FROM step_stats_hourly WHERE hour < ? GROUP BY contract_name, contract_version, step_name`), sqldb.Time(w.T))
		return err
	})
	if err != nil {
		return 0, sqldb.TranslateError(err)
	}
	return int(n), nil
}

// refill empties the roll-up table and fills it again with insert (an
// INSERT … SELECT from the rows it sums), in tx: the repair commands'
// rebuilds. It returns the rows inserted.
func refill(ctx context.Context, tx *sqlx.Tx, table, insert string, args ...any) (int64, error) {
	if _, err := tx.ExecContext(ctx, `DELETE FROM `+table); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, insert, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
