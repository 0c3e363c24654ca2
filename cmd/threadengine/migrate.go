package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/threadengine/engine/adapters/sqldb"
)

func init() {
	commands["migrate"], summaries["migrate"] = migrate, "status|up|down [--to VERSION]: show or change the database schema"
}

// migrate runs the embedded migrations by hand: `up` is what every start
// does, `down` is the rollback runbook's step (docs/operators/running.md),
// `status` shows each migration and the schema compatibility window.
func migrate(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageError{"want status, up or down"}
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("migrate "+sub, flag.ContinueOnError)
	to := fs.Int64("to", 0, "up: apply up to this version (default all); down: roll back every migration above it (default: only the latest)")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if sub != "status" && sub != "up" && sub != "down" {
		return usageError{fmt.Sprintf("unknown migrate command %q: want status, up or down", sub)}
	}
	if *to < 0 {
		return usageError{"--to must be a migration version (0 or more)"}
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	// On SQLite this takes the data file's process lock: migrating a
	// database an engine is serving is refused.
	db, err := openDatabase(ctx, cfg, sqldb.OpenOptions{NoMigrate: true})
	if err != nil {
		return err
	}
	defer db.Close()
	out := os.Stdout
	var steps []sqldb.MigrationStep
	switch sub {
	case "status":
		st, err := db.MigrationStatus(ctx)
		if err != nil {
			return err
		}
		for _, m := range st {
			at := "pending"
			if m.Applied {
				at = "applied " + m.AppliedAt.UTC().Format("2006-01-02 15:04:05Z")
			}
			fmt.Fprintf(out, "%05d  %-45s %s\n", m.Version, m.Name, at)
		}
	case "up":
		steps, err = db.MigrateUp(ctx, *to)
	case "down":
		down := *to
		if !flagSet(fs, "to") {
			down = -1
		}
		steps, err = db.MigrateDown(ctx, down)
	}
	for _, s := range steps {
		fmt.Fprintf(out, "%-4s %05d %s (%s)\n", s.Direction, s.Version, s.Name, s.Took.Round(1e6))
	}
	if err != nil {
		return err
	}
	return printCompat(ctx, out, db)
}

// printCompat says which binaries may now use the database.
func printCompat(ctx context.Context, out io.Writer, db *sqldb.DB) error {
	c, err := db.ReadCompat(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "database schema %d; binaries of schema %d up to %d may use it; this binary is schema %d: ",
		c.Database, c.MinBinary, c.Database, c.Binary)
	if err := c.Err(); err != nil {
		fmt.Fprintf(out, "it would refuse to serve (%v)\n", err)
	} else {
		fmt.Fprintln(out, "it may serve")
	}
	return nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
