package main

import (
	"context"
	"fmt"
	"os"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/threadquery"
)

func init() {
	// rebuild-step-stats repairs step_stats_total: one transaction that
	// holds the roll-up's watermark, so it may run while engines serve (on
	// SQLite too: it waits for the writer like any write).
	commands["rebuild-step-stats"] = rebuild("step_stats_total", (*threadquery.Store).RebuildStepStatsTotal)
	summaries["rebuild-step-stats"] = "recompute the per-step totals (step_stats_total) from the hourly roll-up; safe beside a running engine"
	// rebuild-process-map repairs process_map_daily: one transaction that
	// holds appends' writes to the day rows back while it recomputes them
	// from the hour rows, so it may run while engines serve.
	commands["rebuild-process-map"] = rebuild("process_map_daily", (*threadquery.Store).RebuildProcessMapDaily)
	summaries["rebuild-process-map"] = "recompute the process map's day rows (process_map_daily) from its hour rows; safe beside a running engine"
}

// rebuild is a repair command (docs/operators/known-limitations.md): it opens
// the configured database beside running engines and recomputes one roll-up
// table with run, printing how many rows it holds now.
func rebuild(table string, run func(*threadquery.Store, context.Context) (int, error)) func(context.Context, []string) error {
	return func(ctx context.Context, args []string) error {
		if len(args) > 0 {
			return usageError{fmt.Sprintf("unexpected argument %q", args[0])}
		}
		cfg, err := loadConfig()
		if err != nil {
			return err
		}
		db, err := openDatabase(ctx, cfg, sqldb.OpenOptions{Alongside: true})
		if err != nil {
			return err
		}
		defer db.Close()
		store := threadquery.New(db)
		defer store.Close()
		n, err := run(store, ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stdout, "%s rebuilt: %d rows\n", table, n)
		return nil
	}
}
