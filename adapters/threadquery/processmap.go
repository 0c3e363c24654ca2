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

// ProcessMapRows: see ports.ProcessMapReads. It reads the roll-up only
// (process_map_hourly_hour index): hours × edges × buckets rows at most,
// however many threads ran.
func (s *Store) ProcessMapRows(ctx context.Context, contractName string, version int, since, until time.Time) ([]ports.ProcessMapRow, error) {
	var rows []processMapRow
	if err := s.selectRaw(ctx, &rows, `SELECT kind, from_step, to_step, bucket, SUM(n) AS n, MAX(example_thread) AS example
 FROM process_map_hourly WHERE contract_name = ? AND contract_version = ? AND hour >= ? AND hour < ?
 GROUP BY kind, from_step, to_step, bucket ORDER BY kind, from_step, to_step, bucket`,
		contractName, version, sqldb.Time(since), sqldb.Time(until)); err != nil {
		return nil, err
	}
	out := make([]ports.ProcessMapRow, len(rows))
	for i, r := range rows {
		out[i] = ports.ProcessMapRow{Kind: r.Kind, From: r.From, To: r.To, Bucket: r.Bucket, Count: r.Count, Example: r.Example}
	}
	return out, nil
}
