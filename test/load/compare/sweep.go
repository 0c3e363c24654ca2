package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/threadengine/engine/test/load/loadgen"
)

// The --sweep scenario: ingestion with and without a retention sweep
// running, interleaved. The database is seeded (in SQL, in bulk) with
// sweepThreads ended threads of sweepSteps steps each, 60 days old; each
// round measures ingestion on an engine without retention, then on one
// started with retention.threads_days = 30, whose sweeper starts deleting
// at once and goes on during the run.
const (
	sweepThreads = 100_000
	sweepSteps   = 10
)

// sweepSeed writes what the engine writes per step (an activity, a step
// state and a notification), for old ended threads.
var sweepSeed = []string{
	// health_version 1: health already kept on the row, as the engine
	// writes it (version 0 would start the upgrade backfill).
	`INSERT INTO threads (id, owner_kind, owner_id, status, created_at, updated_at, completed_at, step_count, health_version)
 SELECT 'old-' || g, 'user', 'seed', 'completed', now() - interval '60 days', now() - interval '60 days', now() - interval '60 days', $1, 1
 FROM generate_series(1, $2::int) g`,
	`INSERT INTO thread_activities (id, thread_id, seq, step_name, idempotency_key, status, attempt, context, recorded_at, content_hash, hash)
 SELECT 'old-' || t || '-' || s, 'old-' || t, s, 'step-' || s, 'k' || s, 'success', 1, '{"n": "1"}', now() - interval '60 days', 'c', 'h'
 FROM generate_series(1, $2::int) t, generate_series(1, $1::int) s`,
	`INSERT INTO thread_step_states (thread_id, step_name, idempotency_key, status, latest_step_id, first_seen_at, last_updated_at)
 SELECT 'old-' || t, 'step-' || s, 'k' || s, 'success', 'old-' || t || '-' || s, now() - interval '60 days', now() - interval '60 days'
 FROM generate_series(1, $2::int) t, generate_series(1, $1::int) s`,
	`INSERT INTO thread_notifications (id, thread_id, step_id, step_name, source, notification_type, message, created_at)
 SELECT 'old-' || t || '-' || s, 'old-' || t, 'old-' || t || '-' || s, 'step-' || s, 'step', 'step.success', 'ok', now() - interval '60 days'
 FROM generate_series(1, $2::int) t, generate_series(1, $1::int) s`,
}

func runSweep(c config) error {
	ctx := context.Background()
	p, cleanup, err := prepare(ctx, &c)
	if err != nil {
		return err
	}
	defer cleanup()
	bins, dbURL, db := p.bins, p.dbURL, c.db

	// The first engine migrates and bootstraps; the seed goes in after.
	e, err := loadgen.StartEngine(bins.engine, dbURL, "")
	if err != nil {
		return err
	}
	key := e.Key
	e.Stop()
	start := time.Now()
	for _, q := range sweepSeed {
		if _, err := db.ExecContext(ctx, q, sweepSteps, sweepThreads); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	// Vacuumed now, so autovacuum does not wake up on the fresh rows during
	// the runs.
	if _, err := db.ExecContext(ctx, `VACUUM (ANALYZE)`); err != nil {
		return err
	}
	fmt.Printf("# seeded %d ended threads of %d steps (%d activities, step states and notifications each), 60 days old, in %s\n",
		sweepThreads, sweepSteps, sweepThreads*sweepSteps, time.Since(start).Round(time.Second))
	fmt.Printf("# machine: %s; load average before: %s\n", machine(), loadavg())

	oldLeft := func() int {
		var n int
		_ = db.QueryRowContext(ctx, `SELECT COUNT(*) FROM threads WHERE id LIKE 'old-%'`).Scan(&n)
		return n
	}
	type sweepRow struct {
		round         int
		normal, swept result
		deleted       int
		elapsed       time.Duration
	}
	var rows []sweepRow
	sweepEnv, settings := []string{"THREADENGINE_RETENTION__THREADS_DAYS=30"}, "the defaults"
	if c.sweepBatch > 0 || c.sweepPause >= 0 {
		settings = "set by --sweep-batch, --sweep-pause; 0 or unset: default"
		if c.sweepBatch > 0 {
			sweepEnv = append(sweepEnv, fmt.Sprintf("THREADENGINE_RETENTION__BATCH_SIZE=%d", c.sweepBatch))
		}
		if c.sweepPause >= 0 {
			sweepEnv = append(sweepEnv, "THREADENGINE_RETENTION__BATCH_PAUSE="+c.sweepPause.String())
		}
	}
	for r := 1; r <= c.rounds; r++ {
		// As in the other scenario: each run starts from vacuumed tables.
		if err := vacuum(ctx, db); err != nil {
			return err
		}
		plain, err := loadgen.StartEngine(bins.engine, dbURL, key)
		if err != nil {
			return err
		}
		normal, err := runIngest(c, bins, plain, fmt.Sprintf("ingest-%d", r))
		plain.Stop()
		if err != nil {
			return err
		}
		if err := vacuum(ctx, db); err != nil {
			return err
		}
		before := oldLeft()
		t0 := time.Now()
		sweeping, err := loadgen.StartEngine(bins.engine, dbURL, key, sweepEnv...)
		if err != nil {
			return err
		}
		swept, err := runIngest(c, bins, sweeping, fmt.Sprintf("ingest-sweeping-%d", r))
		sweeping.Stop()
		elapsed := time.Since(t0)
		if err != nil {
			return err
		}
		deleted := before - oldLeft()
		if deleted == 0 {
			return fmt.Errorf("round %d: the sweeper deleted nothing during the run", r)
		}
		rows = append(rows, sweepRow{round: r, normal: normal, swept: swept, deleted: deleted, elapsed: elapsed})
		fmt.Printf("# round %d done, load average %s\n", r, loadavg())
	}

	fmt.Printf("\n# %d round(s) of %s per run; %d SDK connections; retention %s (%s)\n", c.rounds, c.duration, c.writeConns,
		strings.Join(sweepEnv[1:], " "), settings)
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "round\tsteps/s normal\tp99\tsteps/s during sweep\tp99\tthreads deleted\tthreads deleted/s\tratio\tp99 ratio")
	var ratios, p99s []float64
	for _, r := range rows {
		ratio := r.swept.rate / r.normal.rate
		p99 := float64(r.swept.p99) / float64(r.normal.p99)
		ratios, p99s = append(ratios, ratio), append(p99s, p99)
		fmt.Fprintf(tw, "%d\t%.0f\t%s\t%.0f\t%s\t%d\t%.0f\t%.2f×\t%.2f×\n", r.round, r.normal.rate, r.normal.p99.Round(100*time.Microsecond),
			r.swept.rate, r.swept.p99.Round(100*time.Microsecond), r.deleted, float64(r.deleted)/r.elapsed.Seconds(), ratio, p99)
	}
	tw.Flush()
	sort.Float64s(ratios)
	sort.Float64s(p99s)
	fmt.Printf("\ningest during a sweep / normal ingest: min %.2f×, median %.2f×, max %.2f× (target ≥ 0.80×)\n",
		ratios[0], median(ratios), ratios[len(ratios)-1])
	fmt.Printf("ingest p99 during a sweep / normal p99: min %.2f×, median %.2f×, max %.2f× (issue 28: ≤ 1.20×)\n",
		p99s[0], median(p99s), p99s[len(p99s)-1])
	return nil
}
