package main

import (
	"context"
	"fmt"
	"os"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/threadquery"
)

func init() {
	commands["rebuild-step-stats"] = rebuildStepStats
	summaries["rebuild-step-stats"] = "recompute the per-step totals (step_stats_total) from the hourly roll-up; safe beside a running engine"
	commands["rebuild-process-map"] = rebuildProcessMap
	summaries["rebuild-process-map"] = "recompute the process map's day rows (process_map_daily) from its hour rows; safe beside a running engine"
}

// rebuildStepStats repairs step_stats_total (docs/operators/known-limitations.md):
// one transaction that holds the roll-up's watermark, so it may run while
// engines serve (on SQLite too: it waits for the writer like any write).
func rebuildStepStats(ctx context.Context, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", args[0])}
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	db, err := sqldb.OpenWith(ctx, cfg.Database.URL, sqldb.OpenOptions{Alongside: true})
	if err != nil {
		return err
	}
	defer db.Close()
	store := threadquery.New(db)
	defer store.Close()
	n, err := store.RebuildStepStatsTotal(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "step_stats_total rebuilt: %d rows\n", n)
	return nil
}

// rebuildProcessMap repairs process_map_daily (docs/operators/known-limitations.md):
// one transaction that holds appends' writes to the day rows back while it
// recomputes them from the hour rows, so it may run while engines serve.
func rebuildProcessMap(ctx context.Context, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", args[0])}
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	db, err := sqldb.OpenWith(ctx, cfg.Database.URL, sqldb.OpenOptions{Alongside: true})
	if err != nil {
		return err
	}
	defer db.Close()
	store := threadquery.New(db)
	defer store.Close()
	n, err := store.RebuildProcessMapDaily(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "process_map_daily rebuilt: %d rows\n", n)
	return nil
}
