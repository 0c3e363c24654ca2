package threadquery_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
)

// BenchmarkProcessMap reads a 30-day process map from the roll-up of a
// contract whose threads recorded 10 steps each, at 10,000 and at 1,000,000
// threads: the roll-up holds one row per (hour, node or edge, duration
// bucket) whatever the thread count, so both read the same number of rows
// (720 hours × 20 nodes and edges × 3 buckets = 43,200 hourly rows, of
// which the map reads the whole days' 30 × 60 day rows and the 24 hours at
// its ends) and only their counts differ. Run it alone:
//
//	THREADENGINE_TEST_POSTGRES_URL=… go test ./adapters/threadquery/ -run '^$' -bench ProcessMap -benchtime 20x
func BenchmarkProcessMap(b *testing.B) {
	if os.Getenv(sqldbtest.PostgresEnv) == "" {
		b.Skip("needs " + sqldbtest.PostgresEnv)
	}
	for _, c := range []struct {
		name    string
		threads int
	}{{"10k_threads", 10_000}, {"1M_threads", 1_000_000}} {
		b.Run(c.name, func(b *testing.B) {
			db := sqldbtest.Open(b, sqldb.Postgres)
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Hour)
			// Each of the 720 hours gets threads/720 threads; each node and
			// edge row of an hour splits its count over 3 duration buckets.
			if _, err := db.ExecContext(ctx, `INSERT INTO process_map_hourly (contract_name, contract_version, kind, from_step, to_step, hour, bucket, n, example_thread)
 SELECT 'pick_flow', 1, k.kind, CASE WHEN k.kind = 'N' THEN '' ELSE 'step_' || (s - 1) END, 'step_' || s,
   $1::timestamptz - (h * interval '1 hour'), 8 + bk, GREATEST(1, $2::bigint / 720 / 3), 't1'
 FROM generate_series(0, 719) h, generate_series(1, 10) s, (VALUES ('N'), ('E')) k(kind), generate_series(0, 2) bk`, now, c.threads); err != nil {
				b.Fatal(err)
			}
			// The day rows, as the append writes them with the hours.
			if _, err := db.ExecContext(ctx, `INSERT INTO process_map_daily (contract_name, contract_version, kind, from_step, to_step, day, bucket, n, example_thread)
 SELECT contract_name, contract_version, kind, from_step, to_step, date_trunc('day', hour AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', bucket, SUM(n), MAX(example_thread)
 FROM process_map_hourly GROUP BY 1, 2, 3, 4, 5, 6, 7`); err != nil {
				b.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, `ANALYZE process_map_hourly; ANALYZE process_map_daily`); err != nil {
				b.Fatal(err)
			}
			s := threadquery.New(db)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rows, err := s.ProcessMapRows(ctx, "pick_flow", 1, now.Add(-720*time.Hour), now.Add(time.Hour))
				if err != nil || len(rows) != 60 {
					b.Fatalf("%d rows, %v", len(rows), err)
				}
			}
		})
	}
}
