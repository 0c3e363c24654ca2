package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/domain"
)

// The process map roll-ups (process_map_hourly, _daily) as the engine fills them on
// append (threadstore.processMapParts): for each step of a contract thread
// (all first attempts here), one on its node row (the attempt's duration
// bucket) and one on its edge row from the previous step (the time since
// the previous step; unknown for the first), in the hour the step finished;
// the hour rows the roll-up job would have deleted are left out.
// The Problems roll-up and the other roll-ups are filled by the engine's
// own RollUp after seeding (main.go).

type pmKey struct {
	name     string
	version  int
	kind     string
	from, to string
	hour     time.Time
	bucket   int
}

type pmRow struct {
	n       int
	example string
}

// pmStep counts one step of thread id into the roll-up.
func (g *gen) pmStep(cname string, version int, id, prevStep, step string, started, finished, prevAt time.Time) {
	if cname == "" {
		return
	}
	if g.pm == nil {
		g.pm = map[pmKey]*pmRow{}
	}
	hour := finished.UTC().Truncate(time.Hour)
	edge := -1
	if !prevAt.IsZero() {
		edge = threadstore.DurationBucket(finished.Sub(prevAt))
	}
	for _, k := range []pmKey{
		{cname, version, "N", "", step, hour, threadstore.DurationBucket(finished.Sub(started))},
		{cname, version, "E", prevStep, step, hour, edge},
	} {
		r := g.pm[k]
		if r == nil {
			r = &pmRow{}
			g.pm[k] = r
		}
		r.n++
		r.example = id
	}
}

// writeProcessMap writes the accumulated roll-up rows, by hour and by day.
func (g *gen) writeProcessMap(ctx context.Context, db *sqldb.DB) (int, error) {
	days, hours := map[pmKey]*pmRow{}, map[pmKey]*pmRow{}
	for k, r := range g.pm {
		if !k.hour.Before(g.hoursAfter) {
			hours[k] = r
		}
		d := k
		d.hour = k.hour.Truncate(24 * time.Hour)
		a := days[d]
		if a == nil {
			a = &pmRow{}
			days[d] = a
		}
		a.n += r.n
		a.example = max(a.example, r.example)
	}
	for _, t := range []struct {
		table, col string
		rows       map[pmKey]*pmRow
	}{{"process_map_hourly", "hour", hours}, {"process_map_daily", "day", days}} {
		if err := writePM(ctx, db, t.table, t.col, t.rows); err != nil {
			return 0, err
		}
	}
	return len(hours), nil
}

func writePM(ctx context.Context, db *sqldb.DB, table, col string, rows map[pmKey]*pmRow) error {
	const cols = 9
	per := 30000 / cols
	keys := make([]pmKey, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	mark := "(" + strings.TrimSuffix(strings.Repeat("?,", cols), ",") + ")"
	for len(keys) > 0 {
		k := min(per, len(keys))
		args := make([]any, 0, k*cols)
		for _, key := range keys[:k] {
			r := rows[key]
			args = append(args, key.name, key.version, key.kind, key.from, key.to, sqldb.Time(key.hour), key.bucket, r.n, r.example)
		}
		q := `INSERT INTO ` + table + ` (contract_name, contract_version, kind, from_step, to_step, ` + col + `, bucket, n, example_thread) VALUES ` +
			strings.TrimSuffix(strings.Repeat(mark+",", k), ",")
		if _, err := db.ExecContext(ctx, db.Rebind(q), args...); err != nil {
			return fmt.Errorf("%s: %w", table, err)
		}
		keys = keys[k:]
	}
	return nil
}

// seedContracts answers GetContract for the seeded contract versions: steps
// step-1 … step-8, in that order.
type seedContracts struct{}

func (seedContracts) GetContract(_ context.Context, name string, version int) (domain.Contract, error) {
	if version == 0 {
		version = 2
	}
	c := domain.Contract{Name: name, Version: version, EntryPoints: []string{"step-1"}}
	for i := 1; i <= 8; i++ {
		c.Steps = append(c.Steps, domain.ContractStep{Name: fmt.Sprintf("step-%d", i), Type: "managed"})
		if i < 8 {
			c.Transitions = append(c.Transitions, domain.Transition{From: fmt.Sprintf("step-%d", i), To: []string{fmt.Sprintf("step-%d", i+1)}})
		}
	}
	return c, nil
}
