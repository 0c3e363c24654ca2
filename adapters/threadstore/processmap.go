package threadstore

import (
	"math/bits"
	"sort"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/ports"
)

// The process map roll-up (process_map_hourly, migration 00060): the first
// attempt of each step identity of a contract thread adds one to its step's
// node row and one to its edge row (previous step → step) of its hour, in
// the append's own transaction, and the same to its day's row
// (process_map_daily, migration 00090). Rows of one round are summed here first, so
// no upsert hits a key twice (PostgreSQL refuses that), and written in key
// order, so concurrent rounds lock them in the same order.

type mapKey struct {
	name     string
	version  int
	kind     string
	from, to string
	hour     time.Time
	bucket   int
}

// DurationBucket is the log2 bucket of a duration in milliseconds: 0 for
// under 1 ms, b for [2^(b-1), 2^b) ms; -1 when unknown (negative).
func DurationBucket(d time.Duration) int {
	if d < 0 {
		return -1
	}
	return bits.Len64(uint64(d / time.Millisecond))
}

func (s *Store) processMapParts(plans []ports.StepPlan) []part {
	sums := map[mapKey]int{}
	example := map[mapKey]string{}
	for _, p := range plans {
		t := p.Thread
		if t.ContractName == "" || p.State.RetryCount != 0 || p.Duplicate {
			continue
		}
		a := p.Activity
		at := a.RecordedAt
		if a.FinishedAt != nil {
			at = *a.FinishedAt
		}
		hour := at.UTC().Truncate(time.Hour)
		node := -1
		if a.StartedAt != nil && a.FinishedAt != nil {
			node = DurationBucket(a.FinishedAt.Sub(*a.StartedAt))
		}
		edge := -1
		if !p.PrevActivityAt.IsZero() {
			edge = DurationBucket(at.Sub(p.PrevActivityAt))
		}
		prev := ""
		if p.State.PreviousStep != "" {
			prev = p.State.PreviousStep
		}
		for _, k := range []mapKey{
			{t.ContractName, t.ContractVersion, "N", "", a.StepName, hour, node},
			{t.ContractName, t.ContractVersion, "E", prev, a.StepName, hour, edge},
		} {
			sums[k]++
			example[k] = t.ID
		}
	}
	if len(sums) == 0 {
		return nil
	}
	// The day rows (migration 00090) sum the same keys by UTC day.
	daySums := map[mapKey]int{}
	dayExample := map[mapKey]string{}
	for k, n := range sums {
		d := k
		d.hour = k.hour.Truncate(24 * time.Hour)
		daySums[d] += n
		if e := example[k]; e > dayExample[d] {
			dayExample[d] = e
		}
	}
	rows, days := mapRows(sums, example), mapRows(daySums, dayExample)
	row := `(?,?,?,?,?,?,?,?,?)`
	if s.db.Dialect == sqldb.Postgres {
		row = `(?,CAST(? AS INTEGER),?,?,?,CAST(? AS TIMESTAMPTZ),CAST(? AS INTEGER),CAST(? AS BIGINT),?)`
	}
	parts := rowsParts(`INSERT INTO process_map_hourly (contract_name, contract_version, kind, from_step, to_step, hour, bucket, n,
 example_thread) VALUES `, row, `
 ON CONFLICT (contract_name, contract_version, kind, from_step, to_step, hour, bucket)
 DO UPDATE SET n = process_map_hourly.n + excluded.n, example_thread = excluded.example_thread`, 9, rows)
	return append(parts, rowsParts(`INSERT INTO process_map_daily (contract_name, contract_version, kind, from_step, to_step, day, bucket, n,
 example_thread) VALUES `, row, `
 ON CONFLICT (contract_name, contract_version, kind, from_step, to_step, day, bucket)
 DO UPDATE SET n = process_map_daily.n + excluded.n, example_thread = excluded.example_thread`, 9, days)...)
}

// mapRows are the rows of summed keys in key order, so concurrent rounds
// lock them in the same order.
func mapRows(sums map[mapKey]int, example map[mapKey]string) [][]any {
	keys := make([]mapKey, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		switch {
		case a.name != b.name:
			return a.name < b.name
		case a.version != b.version:
			return a.version < b.version
		case a.kind != b.kind:
			return a.kind < b.kind
		case a.from != b.from:
			return a.from < b.from
		case a.to != b.to:
			return a.to < b.to
		case !a.hour.Equal(b.hour):
			return a.hour.Before(b.hour)
		}
		return a.bucket < b.bucket
	})
	rows := make([][]any, len(keys))
	for i, k := range keys {
		rows[i] = []any{k.name, k.version, k.kind, k.from, k.to, sqldb.Time(k.hour), k.bucket, sums[k], example[k]}
	}
	return rows
}
