package threadquery

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

var _ ports.ProblemReads = (*Store)(nil)

// The Problems view reads a roll-up (problems_hourly, migration 00089): the
// unhealthy threads that ended, counted per UTC hour they started and first
// issue, once the watermark stats_rollup 'problems' passes their updated_at.
// An ended thread's updated_at is when it was ended, on the engine's clock
// (a step, an end request or the quiet-trace pass; never a span's or a
// client's time), and nothing changes an ended thread again, so each one is
// counted once. The threads still active, or ended at or after the
// watermark, are read from threads (threads_active_unhealthy_read,
// threads_settled): the threads in flight, not history. Both halves
// are bounded by the watermark read in the same statement, so a roll-up
// committing meanwhile neither loses nor double-counts a thread. Deleting a
// rolled-up thread (retention, erasure) subtracts it in the delete's
// transaction (threadstore.unrollProblems). problems_daily (migration
// 00093) is the same roll-up per day, kept by triggers on problems_hourly;
// a report reads the days that lie inside one trend bucket from it
// (problemSpans).

// ProblemsRollup is the stats_rollup row of the Problems roll-up.
const ProblemsRollup = "problems"

type problemRow struct {
	Hour            string `db:"h"`
	Bucket          int64  `db:"b"`
	ContractName    string `db:"contract_name"`
	ContractVersion int    `db:"contract_version"`
	Rule            string `db:"rule"`
	Step            string `db:"step"`
	Message         string `db:"message"`
	Rolled          int    `db:"rolled"`
	Count           int    `db:"n"`
	Example         string `db:"example"`
}

// problemCols are a thread row's problem key: its start hour, contract
// version, first issue type and step, and a free-form thread's message.
func (s *Store) problemCols() string {
	return s.db.UTCHour("created_at") + ` AS h, COALESCE(contract_name, '') AS contract_name,
 COALESCE(contract_version, 0) AS contract_version, COALESCE(first_issue_type, '') AS rule,
 COALESCE(first_issue_step, '') AS step,
 CASE WHEN contract_name IS NULL THEN COALESCE(first_issue_message, '') ELSE '' END AS message`
}

// unhealthy is the Problems view's predicate for running threads: its text
// is the partial index's (threads_active_unhealthy_read), so SQLite uses it.
const unhealthy = `health IN ('FAILED', 'VIOLATED')`

// unhealthyEnded is the same predicate for the threads ended since a
// watermark, written as an expression so that no planner walks every
// unhealthy thread by (health, created_at) rather than the few ended since
// by settled_at (threads_settled).
const unhealthyEnded = `(health || '') IN ('FAILED', 'VIOLATED')`

// ProblemRows: see ports.ProblemReads. Rows are keyed by bucket and cause
// and by where they were read (roll-up or threads), newest buckets first,
// so a truncated read keeps the newest.
//
// The threads ended since the roll-up are found by their settled_at (an
// ended thread's updated_at; threads_settled): the watermark is read first and passed as a
// value, so the planner sees how few threads are past it, and the same
// bound read again inside the statement (never lower: the watermark only
// moves forward) keeps the halves exact if a roll-up commits in between.
// Their health (and on SQLite their start) is compared as an expression so
// no planner walks every unhealthy thread of the window by (health,
// created_at) instead; the statement is not prepared, so PostgreSQL plans
// it with these values.
func (s *Store) ProblemRows(ctx context.Context, since, until time.Time, bucket time.Duration, limit int) ([]ports.ProblemRow, error) {
	w, ok, err := s.watermark(ctx, ProblemsRollup)
	if err != nil {
		return nil, err
	}
	if !ok {
		w = epoch
	}
	started := "created_at"
	if s.db.Dialect == sqldb.SQLite {
		started = "+created_at" // SQLite's way to keep a term off the indexes
	}
	secs := int64(bucket / time.Second)
	if secs < 3600 {
		secs = 3600
	}
	days, hours := problemSpans(since, until, time.Duration(secs)*time.Second)
	from, to := sqldb.Time(since), sqldb.Time(until)
	origin := s.bucketOrigin(since)
	// One range scan per span (UNION ALL, not OR: SQLite's OR of ranges
	// reads each row from the table, not from the covering index).
	var branches []string
	var args []any
	for _, r := range []struct {
		table, col string
		spans      []any
	}{{"problems_daily", "day", days}, {"problems_hourly", "hour", hours}} {
		for i := 0; i < len(r.spans); i += 2 {
			branches = append(branches, `SELECT `+s.bucketOf(r.col)+` AS b, contract_name, contract_version, rule, step, message_class AS message,
 1 AS rolled, n, example_thread AS example FROM `+r.table+` WHERE `+r.col+` >= ? AND `+r.col+` < ? AND n <> 0`)
			args = append(args, origin, secs, r.spans[i], r.spans[i+1])
		}
	}
	branches = append(branches, `SELECT `+s.bucketOf("created_at")+` AS b, `+problemCause+`, 0 AS rolled, 1 AS n, id AS example FROM threads
 WHERE status = 'active' AND `+unhealthy+` AND created_at >= ? AND created_at < ?`,
		`SELECT `+s.bucketOf("created_at")+` AS b, `+problemCause+`, 0 AS rolled, 1 AS n, id AS example FROM threads
 WHERE settled_at >= ? AND settled_at >= COALESCE((SELECT rolled_until FROM stats_rollup WHERE name = '`+ProblemsRollup+`'), ?)
 AND `+unhealthyEnded+` AND `+started+` >= ? AND `+started+` < ?`)
	q := `SELECT b, contract_name, contract_version, rule, step, message, rolled, SUM(n) AS n, MAX(example) AS example FROM (
 ` + strings.Join(branches, "\n UNION ALL\n ") + `
) x GROUP BY b, contract_name, contract_version, rule, step, message, rolled
 ORDER BY b DESC LIMIT ?`
	args = append(args, origin, secs, from, to, origin, secs, sqldb.Time(w), sqldb.Time(epoch), from, to, limit)
	var rows []problemRow
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(q), args...); err != nil {
		return nil, sqldb.TranslateError(err)
	}
	out := make([]ports.ProblemRow, 0, len(rows))
	for _, r := range rows {
		class := r.Message
		if r.Rolled == 0 && r.ContractName == "" {
			class = domain.MessageClass(r.Message)
		}
		out = append(out, ports.ProblemRow{ContractName: r.ContractName, ContractVersion: r.ContractVersion, Rule: r.Rule, Step: r.Step,
			MessageClass: class, Start: since.Add(time.Duration(r.Bucket) * time.Duration(secs) * time.Second), Count: r.Count, Example: r.Example})
	}
	return out, nil
}

// problemSpans splits a report's window into the spans read from each
// roll-up, as [from, to) bounds: the whole UTC days that lie inside one
// trend bucket come from problems_daily (a day's row is its hours' sum,
// migration 00093), every other hour of the window from problems_hourly.
// A 30-day report (60-hour buckets) reads ~18 days and the ~12 days its
// bucket edges cut as hours: ~300 rows per cause instead of 720. Windows
// whose buckets are shorter than a day read hours only, as before.
func problemSpans(since, until time.Time, bucket time.Duration) (days, hours []any) {
	const day = 24 * time.Hour
	in := func(t time.Time) int64 { return int64(t.Sub(since) / bucket) }
	add := func(spans []any, from, to time.Time) []any {
		if n := len(spans); n > 0 && spans[n-1].(time.Time).Equal(sqldb.Time(from)) {
			spans[n-1] = sqldb.Time(to) // adjacent: one span
			return spans
		}
		return append(spans, sqldb.Time(from), sqldb.Time(to))
	}
	for d := since.UTC().Truncate(day); d.Before(until); d = d.Add(day) {
		from, to := d, d.Add(day)
		if !from.Before(since) && !to.After(until) && in(from) == in(to.Add(-time.Hour)) {
			days = add(days, from, to)
			continue
		}
		if from.Before(since) {
			from = since
		}
		if to.After(until) {
			to = until
		}
		hours = add(hours, from, to)
	}
	return days, hours
}

// problemCause is a thread row's cause columns (problemCols without the hour).
const problemCause = `COALESCE(contract_name, '') AS contract_name, COALESCE(contract_version, 0) AS contract_version,
 COALESCE(first_issue_type, '') AS rule, COALESCE(first_issue_step, '') AS step,
 CASE WHEN contract_name IS NULL THEN COALESCE(first_issue_message, '') ELSE '' END AS message`

// bucketOf is the bucket number of a timestamp column, counted from an
// origin in buckets of a width in seconds (two parameters: bucketOrigin,
// then the width): integer arithmetic, so the grouping hashes numbers, not
// formatted hours. SQLite keeps times as text ("2006-01-02 15:04:05… +0000
// UTC"), whose first 19 characters strftime reads.
func (s *Store) bucketOf(col string) string {
	if s.db.Dialect == sqldb.Postgres {
		// date_part is double precision, extract numeric: the 30-day
		// report's ~11,000 rows group a quarter faster.
		return `CAST(floor((date_part('epoch', ` + col + `) - CAST(? AS BIGINT)) / CAST(? AS BIGINT)) AS BIGINT)`
	}
	return `((CAST(strftime('%s', SUBSTR(REPLACE(` + col + `, 'T', ' '), 1, 19)) AS INTEGER) - ?) / ?)`
}

// bucketOrigin is bucketOf's origin parameter.
func (s *Store) bucketOrigin(since time.Time) any { return since.Unix() }

// problemKey is one problems_hourly row's key (threadstore.unrollProblems
// computes the same).
type problemKey struct {
	Hour            time.Time
	ContractName    string
	ContractVersion int
	Rule, Step      string
	MessageClass    string
}

// problemKeyOf is the roll-up key of a thread's problem columns (problemCols
// read into a row; hour as "YYYY-MM-DD HH").
func problemKeyOf(hour, contractName string, contractVersion int, rule, step, message string) (problemKey, bool) {
	h, err := time.Parse("2006-01-02 15", strings.TrimSpace(hour))
	if err != nil {
		return problemKey{}, false
	}
	k := problemKey{Hour: h.UTC(), ContractName: contractName, ContractVersion: contractVersion, Rule: rule, Step: step}
	if contractName == "" {
		k.MessageClass = domain.MessageClass(message)
	}
	return k, true
}

// rollUpProblems adds the unhealthy threads ended in [watermark, until) to
// the roll-up, like the contract statistics at most RollupHoursPerCall
// hours of them per call (endedStep; more reports that some are left).
// Like them it waits while any thread's health is still to be recomputed
// (health_version 0).
func (s *Store) rollUpProblems(ctx context.Context, tx *sqlx.Tx, until time.Time) (more bool, err error) {
	from, until, more, ok, err := s.endedWindow(ctx, tx, ProblemsRollup, until)
	if err != nil || !ok {
		return false, err
	}
	var rows []problemRow
	if err := tx.SelectContext(ctx, &rows, s.db.Rebind(`SELECT h, contract_name, contract_version, rule, step, message, 1 AS rolled,
 COUNT(*) AS n, MAX(example) AS example FROM (SELECT `+s.problemCols()+`, id AS example FROM threads
 WHERE settled_at >= ? AND settled_at < ? AND `+unhealthyEnded+`) x
 GROUP BY h, contract_name, contract_version, rule, step, message`), sqldb.Time(from), sqldb.Time(until)); err != nil {
		return false, err
	}
	// Free-form messages of one class are summed here, so each key is
	// written once.
	type sum struct {
		n       int
		example string
	}
	sums := map[problemKey]*sum{}
	var keys []problemKey
	for _, r := range rows {
		k, ok := problemKeyOf(r.Hour, r.ContractName, r.ContractVersion, r.Rule, r.Step, r.Message)
		if !ok {
			continue
		}
		a := sums[k]
		if a == nil {
			a = &sum{}
			sums[k] = a
			keys = append(keys, k)
		}
		a.n += r.Count
		if r.Example > a.example {
			a.example = r.Example
		}
	}
	for _, k := range keys {
		a := sums[k]
		if _, err := tx.ExecContext(ctx, s.db.Rebind(`INSERT INTO problems_hourly (hour, contract_name, contract_version, rule, step,
 message_class, n, example_thread) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
 ON CONFLICT (hour, contract_name, contract_version, rule, step, message_class) DO UPDATE SET n = problems_hourly.n + excluded.n,
 example_thread = CASE WHEN problems_hourly.example_thread = '' THEN excluded.example_thread ELSE problems_hourly.example_thread END`),
			sqldb.Time(k.Hour), k.ContractName, k.ContractVersion, k.Rule, k.Step, k.MessageClass, a.n, a.example); err != nil {
			return false, err
		}
	}
	_, err = tx.ExecContext(ctx, s.db.Rebind(`UPDATE stats_rollup SET rolled_until = ? WHERE name = ?`), sqldb.Time(until), ProblemsRollup)
	return more, err
}

// watermark reads a roll-up's watermark; ok is false before its first run.
func (s *Store) watermark(ctx context.Context, name string) (time.Time, bool, error) {
	var t dbTime
	err := s.db.GetContext(ctx, &t, s.db.Rebind(`SELECT rolled_until FROM stats_rollup WHERE name = ?`), name)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, sqldb.TranslateError(err)
	}
	return t.T.UTC(), true, nil
}
