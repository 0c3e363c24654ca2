package threadquery

import (
	"context"
	"strings"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/ports"
)

var _ ports.ThreadStats = (*Store)(nil)

type contractStatRow struct {
	Name    string `db:"contract_name"`
	Version int    `db:"contract_version"`
	Status  string `db:"status"`
	Health  string `db:"health"`
	N       int    `db:"n"`
}

// ContractStats counts threads per contract version: one count per (version,
// status, health), from the totals and the deltas not folded into them yet
// (contract_rollup.go), summed here.
func (s *Store) ContractStats(ctx context.Context) ([]ports.ContractStat, error) {
	var rows []contractStatRow
	if err := s.selectRaw(ctx, &rows, contractStatsQuery); err != nil {
		return nil, err
	}
	var out []ports.ContractStat
	for _, r := range rows {
		if r.N == 0 {
			continue
		}
		if len(out) == 0 || out[len(out)-1].Name != r.Name || out[len(out)-1].Version != r.Version {
			out = append(out, ports.ContractStat{Name: r.Name, Version: r.Version})
		}
		c := &out[len(out)-1]
		c.Threads += r.N
		switch r.Status {
		case "active":
			c.Active += r.N
		case "completed":
			c.Completed += r.N
		case "failed":
			c.Failed += r.N
		case "cancelled":
			c.Cancelled += r.N
		}
		switch r.Health {
		case "VIOLATED":
			c.Violated += r.N
		case "FAILED":
			c.HealthFailed += r.N
		case "WARNING":
			c.Warn += r.N
		}
	}
	if out == nil {
		out = []ports.ContractStat{}
	}
	return out, nil
}

type stepStatRow struct {
	StepName string `db:"step_name"`
	Attempts int    `db:"attempts"`
	Failed   int    `db:"failed"`
	Violated int    `db:"violated"`
	Warnings int    `db:"warnings"`
}

// StepStats counts one contract version's steps: attempts and failures from
// the activity log, violations and warnings from the validations — the
// roll-up's totals (step_stats_total: every hour before the watermark, one
// row per step) plus the raw rows from the watermark w on. w is read first
// (a bound value lets the raw halves use their time indexes); should a
// roll-up commit hours past w before the statement runs, the totals hold
// them and so do the hourly rows from w on, which the statement takes out
// in the same snapshot, so no hour is lost or counted twice.
func (s *Store) StepStats(ctx context.Context, contractName string, version int) ([]ports.StepStat, error) {
	w, rolled, err := s.rolledUntil(ctx)
	if err != nil {
		return nil, err
	}
	if !rolled {
		w = epoch
	}
	cond, args := `t.contract_name = ?`, []any{contractName}
	rcond, rargs := `r.contract_name = ?`, []any{contractName}
	if version > 0 {
		cond += ` AND t.contract_version = ?`
		args = append(args, version)
		rcond += ` AND r.contract_version = ?`
		rargs = append(rargs, version)
	}
	parts := []string{`SELECT r.step_name, r.attempts, r.failed, r.violated, r.warnings FROM step_stats_total r WHERE ` + rcond,
		`SELECT r.step_name, -r.attempts, -r.failed, -r.violated, -r.warnings FROM step_stats_hourly r WHERE ` + rcond + ` AND r.hour >= ?`}
	all := append(append(append([]any{}, rargs...), rargs...), sqldb.Time(w))
	raw, rawArgs := rawStepParts(`JOIN threads t ON t.id = %s.thread_id AND `+cond, args, w, time.Time{})
	parts = append(parts, raw...)
	all = append(all, rawArgs...)
	return s.stepStats(ctx, contractName, parts, all, `ORDER BY SUM(failed) + SUM(violated) DESC, step_name`)
}

// rawStepParts are the raw halves of a step aggregate: attempts recorded and
// validations made in [from, to) (zero times: unbounded), joined as join says
// (%s is the table alias).
func rawStepParts(join string, joinArgs []any, from, to time.Time) ([]string, []any) {
	var parts []string
	var args []any
	for _, x := range []struct{ alias, table, at, sel string }{
		{"a", "thread_activities", "recorded_at", `a.step_name, 1 AS attempts, CASE WHEN a.status IN ('failed','error') THEN 1 ELSE 0 END AS failed, 0 AS violated, 0 AS warnings`},
		{"v", "thread_validations", "created_at", `v.step_name, 0 AS attempts, 0 AS failed, CASE WHEN v.overall_status = 'violated' THEN 1 ELSE 0 END AS violated, CASE WHEN v.overall_status = 'warning' THEN 1 ELSE 0 END AS warnings`},
	} {
		q := `SELECT ` + x.sel + ` FROM ` + x.table + ` ` + x.alias
		var a []any
		if join != "" {
			q += ` ` + strings.ReplaceAll(join, "%s", x.alias)
			a = append(a, joinArgs...)
		}
		var where []string
		if !from.IsZero() {
			where = append(where, x.alias+`.`+x.at+` >= ?`)
			a = append(a, sqldb.Time(from))
		}
		if !to.IsZero() {
			where = append(where, x.alias+`.`+x.at+` < ?`)
			a = append(a, sqldb.Time(to))
		}
		if len(where) > 0 {
			q += ` WHERE ` + strings.Join(where, " AND ")
		}
		parts = append(parts, q)
		args = append(args, a...)
	}
	return parts, args
}

// stepStats sums the parts' rows (step_name, attempts, failed, violated,
// warnings) per step.
func (s *Store) stepStats(ctx context.Context, contractName string, parts []string, args []any, tail string) ([]ports.StepStat, error) {
	q := `SELECT step_name, SUM(attempts) AS attempts, SUM(failed) AS failed, SUM(violated) AS violated, SUM(warnings) AS warnings FROM (
` + strings.Join(parts, "\n UNION ALL\n") + `
) x GROUP BY step_name ` + tail
	var rows []stepStatRow
	if err := s.selectRaw(ctx, &rows, q, args...); err != nil {
		return nil, err
	}
	out := make([]ports.StepStat, len(rows))
	for i, r := range rows {
		out[i] = ports.StepStat{ContractName: contractName, StepName: r.StepName, Attempts: r.Attempts, Failed: r.Failed, Violated: r.Violated, Warnings: r.Warnings}
	}
	return out, nil
}

type hourRow struct {
	Hour      string `db:"h"`
	Started   int    `db:"started"`
	Completed int    `db:"completed"`
	Failed    int    `db:"failed"`
}

// Hourly counts threads started, completed and failed per UTC hour since a
// time (the (created_at, id) and threads_completed indexes).
func (s *Store) Hourly(ctx context.Context, since, until time.Time) ([]ports.HourBucket, error) {
	hour := func(col string) string {
		if s.db.Dialect == sqldb.Postgres {
			// date_trunc per row, to_char once per hour (to_char per row
			// was half of the 7-day query).
			return `date_trunc('hour', ` + col + ` AT TIME ZONE 'UTC')`
		}
		// SQLite keeps times as UTC text ("2006-01-02 15:04:05…"): its
		// first 13 characters are the hour.
		return `REPLACE(SUBSTR(` + col + `, 1, 13), 'T', ' ')`
	}
	outer := "h"
	if s.db.Dialect == sqldb.Postgres {
		outer = `to_char(h, 'YYYY-MM-DD HH24')`
	}
	q := `SELECT ` + outer + ` AS h, SUM(started) AS started, SUM(completed) AS completed, SUM(failed) AS failed FROM (
 SELECT ` + hour("created_at") + ` AS h, COUNT(*) AS started, 0 AS completed, 0 AS failed FROM threads WHERE created_at >= ? GROUP BY 1
 UNION ALL
 SELECT ` + hour("completed_at") + `, 0, SUM(CASE WHEN status = 'completed' THEN 1 ELSE 0 END), SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END)
 FROM threads WHERE completed_at >= ? GROUP BY 1
) x GROUP BY x.h ORDER BY x.h`
	var rows []hourRow
	since = since.UTC().Truncate(time.Hour)
	if err := s.selectRaw(ctx, &rows, q, since, since); err != nil {
		return nil, err
	}
	byHour := map[string]hourRow{}
	for _, r := range rows {
		byHour[r.Hour] = r
	}
	var out []ports.HourBucket
	for t := since; !t.After(until); t = t.Add(time.Hour) {
		r := byHour[t.Format("2006-01-02 15")]
		out = append(out, ports.HourBucket{Start: t, Started: r.Started, Completed: r.Completed, Failed: r.Failed})
	}
	return out, nil
}

// StepsSince counts attempts and validation outcomes per step name since a
// time, worst first: raw rows up to the first whole hour, the hourly roll-up
// for whole hours before its watermark, raw rows after it.
func (s *Store) StepsSince(ctx context.Context, since time.Time, limit int) ([]ports.StepStat, error) {
	since = since.UTC()
	w, rolled, err := s.rolledUntil(ctx)
	if err != nil {
		return nil, err
	}
	var parts []string
	var args []any
	add := func(p []string, a []any) { parts = append(parts, p...); args = append(args, a...) }
	if !rolled || !since.Before(w) {
		add(rawStepParts("", nil, since, time.Time{}))
	} else {
		first := since.Truncate(time.Hour)
		if first.Before(since) {
			first = first.Add(time.Hour)
		}
		if first.After(w) {
			first = w
		}
		if since.Before(first) {
			add(rawStepParts("", nil, since, first))
		}
		if first.Before(w) {
			add([]string{`SELECT r.step_name, r.attempts, r.failed, r.violated, r.warnings FROM step_stats_hourly r WHERE r.hour >= ? AND r.hour < ?`},
				[]any{sqldb.Time(first), sqldb.Time(w)})
		}
		add(rawStepParts("", nil, w, time.Time{}))
	}
	return s.stepStats(ctx, "", parts, append(args, limit), `ORDER BY SUM(failed) + SUM(violated) DESC, SUM(attempts) DESC, step_name LIMIT ?`)
}
