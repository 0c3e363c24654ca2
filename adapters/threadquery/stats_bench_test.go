package threadquery_test

import (
	"context"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
)

// BenchmarkOverviewAggregates1MSteps measures the contracts and overview
// aggregates on PostgreSQL over 1,000,000 step attempts (100,000 threads of
// 10 steps spread over 7 days, 20 step names, every 10th thread violated,
// every 25th failed, a validation per attempt), after rolling the ended hours
// up as the engine does in the background. Seeding runs in the database
// (generate_series, about 35 s on 2 cores); run it alone
// (THREADENGINE_BENCH_EXPLAIN=1 also logs each statement's plan):
//
//	THREADENGINE_TEST_POSTGRES_URL=… go test ./adapters/threadquery/ -run '^$' -bench Overview -benchtime 20x
func BenchmarkOverviewAggregates1MSteps(b *testing.B) {
	if os.Getenv(sqldbtest.PostgresEnv) == "" {
		b.Skip("needs " + sqldbtest.PostgresEnv)
	}
	db := sqldbtest.Open(b, sqldb.Postgres)
	ctx := context.Background()
	now := time.Now().UTC()
	start := time.Now()
	for _, q := range []string{
		`INSERT INTO threads (id, contract_id, contract_name, contract_version, owner_kind, owner_id, status, health, created_at, updated_at, completed_at, step_count, health_version, duration_ms)
 SELECT 't' || g, 'c' || (g % 5), 'contract_' || (g % 5), 1, 'user', 'u1',
   CASE WHEN g % 25 = 0 THEN 'failed' WHEN g % 7 = 0 THEN 'active' ELSE 'completed' END,
   CASE WHEN g % 25 = 0 THEN 'FAILED' WHEN g % 10 = 0 THEN 'VIOLATED' ELSE 'OK' END,
   $1::timestamptz - (g * interval '6 seconds'), $1::timestamptz - (g * interval '6 seconds'),
   CASE WHEN g % 7 = 0 THEN NULL ELSE $1::timestamptz - (g * interval '6 seconds') + interval '40 seconds' END, 10, 1, 40000
 FROM generate_series(1, 100000) g`,
		`INSERT INTO thread_activities (id, thread_id, seq, step_name, idempotency_key, status, attempt, recorded_at, content_hash, hash)
 SELECT 'a' || t || '-' || s, 't' || t, s, 'step_' || ((t + s) % 20), 'k', CASE WHEN (t + s) % 31 = 0 THEN 'failed' ELSE 'success' END, 1,
   $1::timestamptz - (t * interval '6 seconds') + s * interval '4 seconds', 'c', 'h'
 FROM generate_series(1, 100000) t, generate_series(1, 10) s`,
		`INSERT INTO thread_validations (id, thread_id, step_id, step_name, idempotency_key, overall_status, created_at)
 SELECT 'v' || t || '-' || s, 't' || t, 'a' || t || '-' || s, 'step_' || ((t + s) % 20), 'k',
   CASE WHEN (t + s) % 53 = 0 THEN 'violated' WHEN (t + s) % 17 = 0 THEN 'warning' ELSE 'passed' END,
   $1::timestamptz - (t * interval '6 seconds') + s * interval '4 seconds'
 FROM generate_series(1, 100000) t, generate_series(1, 10) s`,
		`ANALYZE threads`, `ANALYZE thread_activities`, `ANALYZE thread_validations`,
	} {
		var err error
		if strings.HasPrefix(q, "ANALYZE") {
			_, err = db.ExecContext(ctx, q)
		} else {
			_, err = db.ExecContext(ctx, q, now)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("seeded 100,000 threads, 1,000,000 attempts and validations in %s (GOMAXPROCS %d)", time.Since(start).Round(time.Second), runtime.GOMAXPROCS(0))
	s := threadquery.New(db)
	// The engine rolls ended hours up in the background (a day per call);
	// here all at once, timed.
	start = time.Now()
	hours := 0
	for {
		n, err := s.RollUp(ctx, now)
		if err != nil {
			b.Fatal(err)
		}
		if hours += n; n == 0 {
			break
		}
	}
	if _, err := db.ExecContext(ctx, `ANALYZE step_stats_hourly`); err != nil {
		b.Fatal(err)
	}
	b.Logf("rolled up %d hours in %s", hours, time.Since(start).Round(time.Millisecond))
	for _, c := range []struct {
		name string
		fn   func() (int, error)
	}{
		{"ContractStats", func() (int, error) { l, err := s.ContractStats(ctx); return len(l), err }},
		{"StepStats_contract", func() (int, error) { l, err := s.StepStats(ctx, "contract_1", 1); return len(l), err }},
		{"Hourly_24h", func() (int, error) {
			l, err := s.Hourly(ctx, now.Add(-23*time.Hour).Truncate(time.Hour), now)
			return len(l), err
		}},
		{"Hourly_7d", func() (int, error) {
			l, err := s.Hourly(ctx, now.Add(-167*time.Hour).Truncate(time.Hour), now)
			return len(l), err
		}},
		{"StepsSince_24h", func() (int, error) { l, err := s.StepsSince(ctx, now.Add(-24*time.Hour), 10); return len(l), err }},
		{"StepsSince_7d", func() (int, error) { l, err := s.StepsSince(ctx, now.Add(-168*time.Hour), 10); return len(l), err }},
	} {
		if os.Getenv("THREADENGINE_BENCH_EXPLAIN") != "" {
			// The plans behind the figures: EXPLAIN ANALYZE of every
			// statement the aggregate runs.
			var stmts [][]any
			s.OnQuery(func(q string, args []any) { stmts = append(stmts, append([]any{q}, args...)) })
			if _, err := c.fn(); err != nil {
				b.Fatal(err)
			}
			s.OnQuery(nil)
			for _, st := range stmts {
				var plan []string
				if err := db.SelectContext(ctx, &plan, "EXPLAIN (ANALYZE, BUFFERS) "+st[0].(string), st[1:]...); err != nil {
					b.Fatal(err)
				}
				b.Logf("%s:\n%s", c.name, strings.Join(plan, "\n"))
			}
		}
		b.Run(c.name, func(b *testing.B) {
			var n int
			for i := 0; i < b.N; i++ {
				var err error
				if n, err = c.fn(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n), "rows")
		})
	}
}
