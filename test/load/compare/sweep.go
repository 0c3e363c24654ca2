package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/test/load/loadgen"
)

// The --sweep scenario: ingestion with and without a retention sweep
// running, interleaved, on PostgreSQL or (--store sqlite) SQLite.
//
// The database holds --sweep-threads ended threads of sweepSteps steps each
// (an activity, a step state and a settled notification per step, written
// in SQL, in bulk), 12 hours old. Each round first adds --sweep-frac of
// that many again, 60 days old (their notifications long pruned), then:
//
//  1. starts an engine with retention.threads_days = 30, whose sweeper
//     starts deleting them at once, and ingests beside it until the sweep
//     has deleted the round's old threads (polled every 100 ms) or
//     --duration ends: the p50 and p99 of that run are ingestion's during
//     the sweep, and its length is the sweep's time;
//  2. stops it and ingests on an engine without retention for as long as
//     the first run lasted (the old threads are gone or still there, as the
//     sweep left them): ingestion without a sweep, on the same data.
//
// So every round sweeps --sweep-frac of the threads and puts the two
// latencies side by side, and the rounds interleave the two runs.
const sweepSteps = 10

// seedThreads writes n ended threads of sweepSteps steps, ids prefix||1..n,
// last changed at "at", in four statements (one per table). The series come
// from recursive CTEs, which both dialects run.
func seedThreads(ctx context.Context, db *sqldb.DB, prefix string, n int, at time.Time, notes bool) error {
	ts := "?"
	if db.Dialect == sqldb.Postgres {
		ts = "CAST(? AS timestamptz)" // a parameter in a select list is text otherwise
	}
	series := `WITH RECURSIVE g(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM g WHERE g < CAST(? AS integer)),
 s(s) AS (SELECT 1 UNION ALL SELECT s + 1 FROM s WHERE s < CAST(? AS integer)) `
	p := "CAST(? AS text)"
	stmts := []struct {
		q    string
		args []any
	}{
		// health_version 1: health already kept on the row, as the engine
		// writes it (version 0 would start the upgrade backfill).
		{`INSERT INTO threads (id, owner_kind, owner_id, status, created_at, updated_at, completed_at, step_count, health_version)
 SELECT ` + p + ` || g, 'user', 'seed', 'completed', ` + ts + `, ` + ts + `, ` + ts + `, ` + fmt.Sprint(sweepSteps) + `, 1 FROM g`,
			[]any{prefix, at, at, at}},
		{`INSERT INTO thread_activities (id, thread_id, seq, step_name, idempotency_key, status, attempt, context, recorded_at, content_hash, hash)
 SELECT ` + p + ` || g || '-' || s, ` + p + ` || g, s, 'step-' || s, 'k' || s, 'success', 1, '{"n": "1"}', ` + ts + `, 'c', 'h' FROM g, s`,
			[]any{prefix, prefix, at}},
		{`INSERT INTO thread_step_states (thread_id, step_name, idempotency_key, status, latest_step_id, first_seen_at, last_updated_at)
 SELECT ` + p + ` || g, 'step-' || s, 'k' || s, 'success', ` + p + ` || g || '-' || s, ` + ts + `, ` + ts + ` FROM g, s`,
			[]any{prefix, prefix, at, at}},
		// Settled (acknowledged) notifications, as the hub leaves them until
		// notifications.settled_retention (24 h) prunes them: unsettled
		// ones would all expire at the engine's start, and on SQLite that
		// holds the one writer for minutes.
		{`INSERT INTO thread_notifications (id, thread_id, step_id, step_name, source, notification_type, message, created_at,
 delivery, deliveries, settled_at)
 SELECT ` + p + ` || g || '-' || s, ` + p + ` || g, ` + p + ` || g || '-' || s, 'step-' || s, 'step', 'step.success', 'ok', ` + ts + `,
 'acked', 1, ` + ts + ` FROM g, s`,
			[]any{prefix, prefix, prefix, at, at}},
	}
	if !notes { // pruned long ago
		stmts = stmts[:3]
	}
	for _, st := range stmts {
		if _, err := db.ExecContext(ctx, db.Rebind(series+st.q), append([]any{n, sweepSteps}, st.args...)...); err != nil {
			return fmt.Errorf("seed %s: %w", strings.Fields(st.q)[2], err)
		}
	}
	return nil
}

// tidy leaves the tables as a live database has them between runs:
// vacuumed and analysed on PostgreSQL (this server's autovacuum may be off;
// every step updates its thread's row), the WAL folded back on SQLite.
func tidy(ctx context.Context, db *sqldb.DB) error {
	q := `VACUUM (ANALYZE)`
	if db.Dialect == sqldb.SQLite {
		q = `PRAGMA wal_checkpoint(TRUNCATE)`
	}
	_, err := db.ExecContext(ctx, q)
	return err
}

func runSweep(ctx context.Context, c config) error {
	var (
		bins  binaries
		dbURL string
		err   error
	)
	if c.store == "sqlite" {
		if bins, err = build(ctx, c); err != nil {
			return err
		}
		dir := c.dir
		if c.keep {
			dir = os.TempDir()
		}
		dbURL = "sqlite://" + filepath.Join(dir, "threadengine-compare-sweep.db")
		for _, s := range []string{"", "-wal", "-shm"} {
			_ = os.Remove(strings.TrimPrefix(dbURL, "sqlite://") + s)
		}
		if c.keep {
			fmt.Printf("# database: %s (kept)\n", dbURL)
		}
	} else {
		p, cleanup, err := prepare(ctx, &c)
		if err != nil {
			return err
		}
		defer cleanup()
		bins, dbURL = p.bins, p.dbURL
	}

	// The first engine migrates and bootstraps; the seed goes in after.
	e, err := loadgen.StartEngine(bins.engine, dbURL, "")
	if err != nil {
		return err
	}
	key := e.Key
	e.Stop()
	// Beside the engines (SQLite: without the one-engine lock; both: the
	// schema is the engine's own).
	db, err := sqldb.OpenWith(ctx, dbURL, sqldb.OpenOptions{Alongside: true, NoMigrate: true})
	if err != nil {
		return err
	}
	defer db.Close()
	start := time.Now()
	now := time.Now().UTC()
	if err := seedThreads(ctx, db, "kept-", c.sweepThreads, sqldb.Time(now.Add(-12*time.Hour)), true); err != nil {
		return err
	}
	if err := tidy(ctx, db); err != nil {
		return err
	}
	// The roll-ups caught up over the seed, as on a live database (an
	// engine's first catch-up of it would hold the roll-up watermark, and on
	// SQLite the one writer, through the first rounds).
	rolled := time.Now()
	rollups := threadquery.New(db)
	err = rollups.CatchUp(ctx, time.Now())
	rollups.Close()
	if err != nil {
		return fmt.Errorf("roll-up: %w", err)
	}
	fmt.Printf("# roll-ups caught up in %s\n", time.Since(rolled).Round(time.Second))
	perRound := int(float64(c.sweepThreads) * c.sweepFrac)
	if perRound < 1 {
		return fmt.Errorf("--sweep-frac %.3f of --sweep-threads %d is no thread", c.sweepFrac, c.sweepThreads)
	}
	fmt.Printf("# %s: seeded %d ended threads of %d steps (an activity, a step state and a settled notification each), 12 hours old, in %s\n",
		db.Dialect, c.sweepThreads, sweepSteps, time.Since(start).Round(time.Second))
	fmt.Printf("# machine: %s; load average before: %s\n", machine(), loadavg())

	// What the sweeper deletes: ended threads last changed before its
	// cutoff (30 days), read as it reads them (settled_at, an ended
	// thread's updated_at, by its index threads_settled: migration 00106).
	cutoff := sqldb.Time(now.Add(-30 * 24 * time.Hour))
	expired := func(ctx context.Context) (int, error) {
		var n int
		err := db.GetContext(ctx, &n, db.Rebind(`SELECT COUNT(*) FROM threads WHERE settled_at < ?`), cutoff)
		return n, err
	}
	type sweepRow struct {
		round         int
		normal, swept result
		deleted       int
		sweepTime     time.Duration // 0: not finished within --duration
		runTime       time.Duration
		load          string
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
		if err := seedThreads(ctx, db, fmt.Sprintf("old%d-", r), perRound, sqldb.Time(time.Now().Add(-60*24*time.Hour)), false); err != nil {
			return err
		}
		if err := tidy(ctx, db); err != nil {
			return err
		}
		before, err := expired(ctx)
		if err != nil {
			return err
		}
		// 1. The sweeping engine, ingestion beside it until the round's old
		// threads are gone.
		t0 := time.Now()
		sweeping, err := loadgen.StartEngine(bins.engine, dbURL, key, sweepEnv...)
		if err != nil {
			return err
		}
		swept := make(chan struct{})
		var sweepTime time.Duration // written by the poller before it closes swept, read after
		polled := make(chan struct{})
		pollCtx, stopPoll := context.WithCancel(ctx)
		go func() {
			defer close(polled)
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-pollCtx.Done():
					return
				case <-t.C:
				}
				var left int
				if err := db.GetContext(pollCtx, &left, db.Rebind(`SELECT COUNT(*) FROM (SELECT 1 FROM threads
 WHERE settled_at < ? LIMIT 1) x`), cutoff); err == nil && left == 0 {
					sweepTime = time.Since(t0)
					close(swept)
					return
				}
			}
		}()
		during, err := runIngestUntil(ctx, c, bins, sweeping, fmt.Sprintf("ingest-sweeping-%d", r), c.duration, swept)
		stopPoll()
		<-polled // the poller has returned: sweepTime is settled
		runTime := time.Since(t0)
		sweeping.Stop()
		if err != nil {
			return err
		}
		after, err := expired(ctx)
		if err != nil {
			return err
		}
		deleted := before - after
		if deleted == 0 {
			return fmt.Errorf("round %d: the sweeper deleted nothing during the run", r)
		}
		select {
		case <-swept:
		default:
			sweepTime = 0
		}
		if err := tidy(ctx, db); err != nil {
			return err
		}
		// 2. The same length of ingestion without a sweep.
		plain, err := loadgen.StartEngine(bins.engine, dbURL, key)
		if err != nil {
			return err
		}
		normal, err := runIngestUntil(ctx, c, bins, plain, fmt.Sprintf("ingest-%d", r), max(during.elapsed, time.Second), nil)
		plain.Stop()
		if err != nil {
			return err
		}
		rows = append(rows, sweepRow{round: r, normal: normal, swept: during, deleted: deleted, sweepTime: sweepTime, runTime: runTime, load: loadavg()})
		fmt.Printf("# round %d done, load average %s\n", r, loadavg())
	}

	fmt.Printf("\n# %s, %d kept threads + %d old ones a round (%.0f %%); %d round(s), each run at most %s; %d SDK connections; retention %s (%s)\n",
		db.Dialect, c.sweepThreads, perRound, 100*c.sweepFrac, c.rounds, c.duration, c.writeConns, strings.Join(sweepEnv[1:], " "), settings)
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "round\tswept\tsweep time\tthreads/s\tsteps/s during\tp50\tp99\tsteps/s without\tp50\tp99\tp50 ratio\tp99 ratio\tload after")
	var p50s, p99s []float64
	for _, r := range rows {
		p50 := float64(r.swept.p50) / float64(r.normal.p50)
		p99 := float64(r.swept.p99) / float64(r.normal.p99)
		if r.swept.p99 > 0 && r.normal.p99 > 0 { // a run that acked no step has no latency
			p50s, p99s = append(p50s, p50), append(p99s, p99)
		}
		took, rate := "not done in "+r.runTime.Round(100*time.Millisecond).String(), float64(r.deleted)/r.runTime.Seconds()
		if r.sweepTime > 0 {
			took, rate = r.sweepTime.Round(100*time.Millisecond).String(), float64(r.deleted)/r.sweepTime.Seconds()
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%.0f\t%.0f\t%s\t%s\t%.0f\t%s\t%s\t%.2f×\t%.2f×\t%s\n", r.round, r.deleted, took, rate,
			r.swept.rate, lat(r.swept.p50), lat(r.swept.p99), r.normal.rate, lat(r.normal.p50), lat(r.normal.p99), p50, p99, r.load)
	}
	tw.Flush()
	if len(p99s) == 0 {
		return fmt.Errorf("no round acked steps both during and without a sweep (the sweeps ended before ingestion began: raise --sweep-threads)")
	}
	sort.Float64s(p50s)
	sort.Float64s(p99s)
	fmt.Printf("\ningest p50 during a sweep / without: min %.2f×, median %.2f×, max %.2f×\n", p50s[0], median(p50s), p50s[len(p50s)-1])
	fmt.Printf("ingest p99 during a sweep / without: min %.2f×, median %.2f×, max %.2f× (issue 28: ≤ 1.20×, the sweep of 10 %% ≤ 1 min)\n",
		p99s[0], median(p99s), p99s[len(p99s)-1])
	return nil
}

func lat(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}
