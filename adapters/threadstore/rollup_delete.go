package threadstore

import (
	"context"
	"database/sql"
	"sort"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
)

// What deleting threads (retention, erasure) takes out of the roll-ups
// besides the contract statistics (erase.go): the Problems view's counts
// and the examples the Problems view and the process map link to, so no
// page links to a thread that is gone.

// problemKey is a problems_hourly key (as threadquery.problemKey).
type problemKey struct {
	hour              time.Time
	name              string
	version           int
	rule, step, class string
}

// unrollProblems subtracts, from the Problems roll-up (migration 00089,
// threadquery/problems.go), the threads about to be deleted that it counts
// (unhealthy, ended before its watermark), and clears them as their rows'
// example. The watermark row is locked first (after the contract
// statistics' one, in the roll-up's order), so a roll-up cannot pass these
// threads between this read and the delete's commit.
func (s *Store) unrollProblems(ctx context.Context, tx *sqlx.Tx, ids []string) error {
	var w []time.Time
	if err := tx.SelectContext(ctx, &w, s.q(`SELECT rolled_until FROM stats_rollup WHERE name = 'problems'`+s.db.ForUpdate())); err != nil {
		return err
	}
	if len(w) == 0 {
		return nil
	}
	in, args := s.inIDs("id", ids)
	var rows []struct {
		ID      string `db:"id"`
		Hour    string `db:"h"`
		Name    string `db:"contract_name"`
		Version int    `db:"contract_version"`
		Rule    string `db:"rule"`
		Step    string `db:"step"`
		Message string `db:"message"`
	}
	if err := tx.SelectContext(ctx, &rows, s.q(`SELECT id, `+s.db.UTCHour("created_at")+` AS h, COALESCE(contract_name, '') AS contract_name,
 COALESCE(contract_version, 0) AS contract_version, COALESCE(first_issue_type, '') AS rule, COALESCE(first_issue_step, '') AS step,
 CASE WHEN contract_name IS NULL THEN COALESCE(first_issue_message, '') ELSE '' END AS message
 FROM threads WHERE status <> 'active' AND updated_at < ? AND health IN ('FAILED', 'VIOLATED') AND `+in),
		append([]any{sqldb.Time(w[0])}, args...)...); err != nil {
		return err
	}
	byKey := map[problemKey][]string{}
	var keys []problemKey
	for _, r := range rows {
		h, err := time.Parse("2006-01-02 15", strings.TrimSpace(r.Hour))
		if err != nil {
			continue
		}
		k := problemKey{hour: h.UTC(), name: r.Name, version: r.Version, rule: r.Rule, step: r.Step}
		if r.Name == "" {
			k.class = domain.MessageClass(r.Message)
		}
		if byKey[k] == nil {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], r.ID)
	}
	if len(keys) == 0 {
		return nil
	}
	// One statement for all the keys (per maxParams rows of them): the rows'
	// counts go down by the threads each loses, and a row whose example is
	// one of the deleted threads loses its example.
	in, idArgs := s.inIDs("problems_hourly.example_thread", ids)
	row := `(?,?,?,?,?,?,?)`
	if s.db.Dialect == sqldb.Postgres {
		row = `(CAST(? AS TIMESTAMPTZ),?,CAST(? AS INTEGER),?,?,?,CAST(? AS BIGINT))`
	}
	vals := make([][]any, len(keys))
	for i, k := range keys {
		vals[i] = []any{sqldb.Time(k.hour), k.name, k.version, k.rule, k.step, k.class, len(byKey[k])}
	}
	for _, p := range rowsParts(`WITH k (hour, contract_name, contract_version, rule, step, message_class, n) AS (VALUES `, row, `)
 UPDATE problems_hourly SET n = problems_hourly.n - k.n,
 example_thread = CASE WHEN `+in+` THEN '' ELSE problems_hourly.example_thread END
 FROM k WHERE problems_hourly.hour = k.hour AND problems_hourly.contract_name = k.contract_name
 AND problems_hourly.contract_version = k.contract_version AND problems_hourly.rule = k.rule AND problems_hourly.step = k.step
 AND problems_hourly.message_class = k.message_class`, 7, vals) {
		if _, err := tx.ExecContext(ctx, s.q(p.q), append(p.args, idArgs...)...); err != nil {
			return err
		}
	}
	return nil
}

// clearMapExamples clears the threads about to be deleted as examples of
// the process map's rows (migrations 00060, 00090): the rows of their
// contract version in the hours (and days) their steps were counted in
// (processMapParts).
// Counts stay: the map says how threads ran, as the step statistics do.
// A row whose example is cleared takes the next thread written to it as
// its example; the map reads the other hours' examples meanwhile.
func (s *Store) clearMapExamples(ctx context.Context, tx *sqlx.Tx, gone []domain.Thread) error {
	type version struct {
		name string
		v    int
	}
	// The contract version of each thread comes from its row, locked and
	// read by the caller: only the attempts' times are read here.
	of := map[string]version{}
	var ids []string
	for _, t := range gone {
		if t.ContractName != "" && t.ContractVersion > 0 { // a version is 1 or more; 0 is NULL
			of[t.ID] = version{t.ContractName, t.ContractVersion}
			ids = append(ids, t.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	in, args := s.inIDs("thread_id", ids)
	var rows []struct {
		Thread   string       `db:"thread_id"`
		Finished sql.NullTime `db:"finished_at"`
		Recorded time.Time    `db:"recorded_at"`
	}
	if err := tx.SelectContext(ctx, &rows, s.q(`SELECT thread_id, finished_at, recorded_at FROM thread_activities WHERE `+in), args...); err != nil {
		return err
	}
	hours := map[version]map[time.Time]bool{}
	threads := map[version]map[string]bool{}
	for _, r := range rows {
		k := of[r.Thread]
		if hours[k] == nil {
			hours[k], threads[k] = map[time.Time]bool{}, map[string]bool{}
		}
		at := r.Recorded
		if r.Finished.Valid {
			at = r.Finished.Time
		}
		hours[k][at.UTC().Truncate(time.Hour)] = true
		threads[k][r.Thread] = true
	}
	versions := make([]version, 0, len(hours))
	for k := range hours {
		versions = append(versions, k)
	}
	sort.Slice(versions, func(i, j int) bool {
		if versions[i].name != versions[j].name {
			return versions[i].name < versions[j].name
		}
		return versions[i].v < versions[j].v
	})
	for _, k := range versions {
		hs := make([]any, 0, len(hours[k]))
		for h := range hours[k] {
			hs = append(hs, sqldb.Time(h))
		}
		ts := make([]string, 0, len(threads[k]))
		for id := range threads[k] {
			ts = append(ts, id)
		}
		dayset := map[time.Time]bool{}
		for h := range hours[k] {
			dayset[h.Truncate(24*time.Hour)] = true
		}
		ds := make([]any, 0, len(dayset))
		for d := range dayset {
			ds = append(ds, sqldb.Time(d))
		}
		in, ids := s.inIDs("example_thread", ts)
		for _, u := range []struct {
			q    string
			keys []any
		}{
			{`UPDATE process_map_hourly SET example_thread = '' WHERE contract_name = ? AND contract_version = ?
 AND hour IN (?) AND `, hs},
			{`UPDATE process_map_daily SET example_thread = '' WHERE contract_name = ? AND contract_version = ?
 AND day IN (?) AND `, ds},
		} {
			q, args, err := sqlx.In(u.q+in, append([]any{k.name, k.v, u.keys}, ids...)...)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, s.q(q), args...); err != nil {
				return err
			}
		}
	}
	return nil
}
