package threadquery

import (
	"context"
	"time"

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
