package threadquery

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/ports"
)

var _ ports.ProcessMapReads = (*Store)(nil)

type processMapRow struct {
	Kind    string `db:"kind"`
	From    string `db:"from_step"`
	To      string `db:"to_step"`
	Bucket  int    `db:"bucket"`
	Count   int64  `db:"n"`
	Example string `db:"example"`
}

// ProcessMapRows: see ports.ProcessMapReads. It reads the roll-ups only:
// the whole UTC days of the window from process_map_daily and the hours
// before and after them from process_map_hourly (their (contract, version,
// day or hour) indexes), so a 30-day map reads ~30 rows per (node or edge,
// bucket) and at most 46 hourly ones, however many threads ran. A day's row
// is written with its hours' (threadstore.processMapParts), so both agree.
func (s *Store) ProcessMapRows(ctx context.Context, contractName string, version int, since, until time.Time) ([]ports.ProcessMapRow, error) {
	const day = 24 * time.Hour
	dStart, dEnd := since.Truncate(day), until.Truncate(day)
	if dStart.Before(since) {
		dStart = dStart.Add(day)
	}
	if !dStart.Before(dEnd) { // no whole day: hours only
		dStart, dEnd = until, until
	}
	var rows []processMapRow
	if err := s.selectRaw(ctx, &rows, `SELECT kind, from_step, to_step, bucket, SUM(n) AS n, MAX(example) AS example FROM (
 SELECT kind, from_step, to_step, bucket, n, example_thread AS example FROM process_map_daily
 WHERE contract_name = ? AND contract_version = ? AND day >= ? AND day < ?
 UNION ALL
 SELECT kind, from_step, to_step, bucket, n, example_thread FROM process_map_hourly
 WHERE contract_name = ? AND contract_version = ? AND hour >= ? AND hour < ?
 UNION ALL
 SELECT kind, from_step, to_step, bucket, n, example_thread FROM process_map_hourly
 WHERE contract_name = ? AND contract_version = ? AND hour >= ? AND hour < ?
) x GROUP BY kind, from_step, to_step, bucket ORDER BY kind, from_step, to_step, bucket`,
		contractName, version, sqldb.Time(dStart), sqldb.Time(dEnd),
		contractName, version, sqldb.Time(since), sqldb.Time(dStart),
		contractName, version, sqldb.Time(dEnd), sqldb.Time(until)); err != nil {
		return nil, err
	}
	out := make([]ports.ProcessMapRow, len(rows))
	for i, r := range rows {
		out[i] = ports.ProcessMapRow{Kind: r.Kind, From: r.From, To: r.To, Bucket: r.Bucket, Count: r.Count, Example: r.Example}
	}
	return out, nil
}

// RebuildProcessMapDaily recomputes process_map_daily from
// process_map_hourly and returns how many day rows it wrote, for the days
// whose hour rows are all still kept (ports.ProcessMapHourlyPruned; older
// day rows are left as they are). It repairs the
// day rows after replicas of a release before migration 00090 appended
// steps during a rolling upgrade (they write the hour rows only, and the
// migration's fill was a snapshot). One transaction: on PostgreSQL the hour
// table is locked against writes (SHARE: appends and the prune wait, one
// that wrote its hour rows commits first) and then the day table (SHARE
// ROW EXCLUSIVE), so every append is in the sum or waits for it; on
// SQLite the transaction is the only writer. Appends of contract threads
// wait while it runs.
func (s *Store) RebuildProcessMapDaily(ctx context.Context) (int, error) {
	day := `SUBSTR(REPLACE(hour, 'T', ' '), 1, 10) || ' 00:00:00 +0000 UTC'` // as the driver writes a UTC time (migration 00090)
	if s.db.Dialect == sqldb.Postgres {
		day = `date_trunc('day', hour AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`
	}
	var n int64
	err := s.db.Tx(ctx, func(tx *sqlx.Tx) error {
		if s.db.Dialect == sqldb.Postgres {
			// The hour rows first (the order appends take them in: hours,
			// then days), against the roll-up's prune as well: a prune
			// committing between the bound read below and the sum would
			// leave its days deleted and not rebuilt.
			if _, err := tx.ExecContext(ctx, `LOCK TABLE process_map_hourly IN SHARE MODE`); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `LOCK TABLE process_map_daily IN SHARE ROW EXCLUSIVE MODE`); err != nil {
				return err
			}
		}
		// Only the days whose hour rows are all kept: the roll-up deleted
		// the older hours, whose day rows are the only count left.
		var pruned dbTime
		if err := tx.GetContext(ctx, &pruned, s.db.Rebind(`SELECT MAX(rolled_until) FROM stats_rollup WHERE name = ?`), ProcessMapPruned); err != nil {
			return err
		}
		kept := sqldb.Time(time.Time{})
		if pruned.Valid {
			kept = sqldb.Time(pruned.T.UTC())
		}
		if _, err := tx.ExecContext(ctx, s.db.Rebind(`DELETE FROM process_map_daily WHERE day >= ?`), kept); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.db.Rebind(`INSERT INTO process_map_daily (contract_name, contract_version, kind, from_step, to_step, day, bucket, n, example_thread)
 SELECT contract_name, contract_version, kind, from_step, to_step, `+day+`, bucket, SUM(n), MAX(example_thread)
 FROM process_map_hourly WHERE hour >= ? GROUP BY contract_name, contract_version, kind, from_step, to_step, `+day+`, bucket`), kept)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, sqldb.TranslateError(err)
	}
	return int(n), nil
}

// ProcessMapPruned is the stats_rollup row holding the bound before which
// the roll-up job deleted process_map_hourly's rows (issue 28): the days
// before it are counted only in process_map_daily.
const ProcessMapPruned = "process_map_hourly_pruned"

// ProcessMapPruneFloor is the min_binary_schema from which the hour rows
// are pruned: binaries of schema 102 on (00102's release) read hour rows
// only within the kept span and rebuild only the kept days; older ones
// read them for any window and rebuild every day from them, so while one
// may still serve (the floor below this) nothing is deleted. Migration
// 00108 (a contract step of its own) raises the floor to 102, so from that
// release on the hour rows are pruned (migrations.md: a change of what the
// previous release reads waits for the floor).
const ProcessMapPruneFloor = 102

// processMapPruneStep bounds one call's prune. The first prune after the
// floor rises finds the hour rows of the whole history before the bound —
// a year of them would be one statement of half a minute or more, in the
// roll-up's transaction, holding SQLite's only writer — so a call deletes
// at most a week of days from the oldest row on, and the roll-up's next
// hours go on from there (a year's backlog: about 52 hours).
const processMapPruneStep = 7 * 24 * time.Hour

// pruneProcessMapHours deletes the hour rows before bound (a UTC day), at
// most processMapPruneStep of days a call, and records how far it went,
// once the floor allows it (ProcessMapPruneFloor); a bound not past the
// recorded one changes nothing (and reads no hour row).
func (s *Store) pruneProcessMapHours(ctx context.Context, tx *sqlx.Tx, bound time.Time) error {
	var floor int64
	if err := tx.GetContext(ctx, &floor, `SELECT min_binary_schema FROM schema_compat WHERE id = 1`); err != nil {
		return err
	}
	if floor < ProcessMapPruneFloor {
		return nil
	}
	var recorded dbTime
	if err := tx.GetContext(ctx, &recorded, s.db.Rebind(`SELECT MAX(rolled_until) FROM stats_rollup WHERE name = ?`), ProcessMapPruned); err != nil {
		return err
	}
	if recorded.Valid && !bound.After(recorded.T) {
		return nil
	}
	// From the oldest hour row before the bound, read every time: a stray
	// row far in the past (an attempt's finishedAt is the client's) or a
	// gap in the history would otherwise be walked a week a call.
	var from dbTime
	if err := tx.GetContext(ctx, &from, s.db.Rebind(`SELECT MIN(hour) FROM process_map_hourly WHERE hour < ?`), sqldb.Time(bound)); err != nil {
		return err
	}
	to := bound
	if end := from.T.UTC().Truncate(24 * time.Hour).Add(processMapPruneStep); from.Valid && end.Before(to) {
		to = end
	}
	if _, err := tx.ExecContext(ctx, s.db.Rebind(`DELETE FROM process_map_hourly WHERE hour < ?`), sqldb.Time(to)); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, s.db.Rebind(`INSERT INTO stats_rollup (name, rolled_until) VALUES (?, ?)
 ON CONFLICT (name) DO UPDATE SET rolled_until = excluded.rolled_until WHERE stats_rollup.rolled_until < excluded.rolled_until`),
		ProcessMapPruned, sqldb.Time(to))
	return err
}
