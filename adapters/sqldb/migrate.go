package sqldb

import (
	"context"
	"fmt"
	"hash/fnv"
	"io/fs"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/threadengine/engine/db"
)

// migrations returns the embedded migrations of the dialect and goose's
// name for it.
func migrations(d Dialect) (fs.FS, goose.Dialect) {
	if d == Postgres {
		sub, _ := fs.Sub(db.Postgres, "postgres")
		return sub, goose.DialectPostgres
	}
	sub, _ := fs.Sub(db.SQLite, "sqlite")
	return sub, goose.DialectSQLite3
}

// EmbeddedSchema is the schema of this binary for dialect d: the highest
// migration version it embeds. Both dialects carry the same numbers.
func EmbeddedSchema(d Dialect) int64 {
	fsys, _ := migrations(d)
	var highest int64
	entries, _ := fs.ReadDir(fsys, ".")
	for _, e := range entries {
		if v, err := goose.NumericComponent(e.Name()); err == nil && v > highest {
			highest = v
		}
	}
	return highest
}

// provider builds the goose provider of the embedded migrations. On
// PostgreSQL it takes a session advisory lock while it runs, so replicas
// (or a migration job) starting together apply each migration once; the
// lock's key is derived from the current schema, so installations in
// other schemas of the same database (tests) do not wait for each other.
//
// Out-of-order migrations are allowed: a number merged below one already
// applied (00040–00042 and 00055 arrived after a development build had
// applied higher ones) is applied on the next start, not refused with
// "missing migrations". Every migration stands alone (it creates what it
// uses), so applying a lower one late is safe.
func (d *DB) provider(ctx context.Context) (*goose.Provider, error) {
	fsys, _ := migrations(d.Dialect)
	return d.providerFS(ctx, fsys)
}

// providerFS is provider over the migrations in fsys (tests pass their own).
func (d *DB) providerFS(ctx context.Context, fsys fs.FS) (*goose.Provider, error) {
	_, dia := migrations(d.Dialect)
	opts := []goose.ProviderOption{goose.WithAllowOutofOrder(true)}
	if d.Dialect == Postgres {
		var schema string
		if err := d.GetContext(ctx, &schema, `SELECT current_schema()`); err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
		h := fnv.New64a()
		h.Write([]byte("threadengine migrations " + schema))
		// One-second probes for up to 10 minutes: a long migration on
		// another replica is waited for, not failed.
		l, err := lock.NewPostgresSessionLocker(lock.WithLockID(int64(h.Sum64()>>1)), lock.WithLockTimeout(1, 600))
		if err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
		opts = append(opts, goose.WithSessionLocker(l))
	}
	p, err := goose.NewProvider(dia, d.DB.DB, fsys, opts...)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return p, nil
}

// Migrate applies every pending migration of the dialect. Versions in the
// database that this binary does not know (applied by a newer release)
// are left alone; whether this binary may use them is the compatibility
// gate's decision (CheckCompat).
func (d *DB) Migrate(ctx context.Context) error {
	_, err := d.MigrateUp(ctx, 0)
	return err
}

// MigrationStep is one migration applied or rolled back.
type MigrationStep struct {
	Version   int64
	Name      string
	Direction string // "up" or "down"
	Took      time.Duration
}

func steps(rs []*goose.MigrationResult) []MigrationStep {
	out := make([]MigrationStep, 0, len(rs))
	for _, r := range rs {
		out = append(out, MigrationStep{Version: r.Source.Version, Name: r.Source.Path, Direction: r.Direction, Took: r.Duration})
	}
	return out
}

// MigrateUp applies the pending migrations up to version to (every one
// when to is 0).
func (d *DB) MigrateUp(ctx context.Context, to int64) ([]MigrationStep, error) {
	p, err := d.provider(ctx)
	if err != nil {
		return nil, err
	}
	var rs []*goose.MigrationResult
	if to == 0 {
		rs, err = p.Up(ctx)
	} else {
		rs, err = p.UpTo(ctx, to)
	}
	if err != nil {
		return steps(rs), fmt.Errorf("migrations: %w", err)
	}
	return steps(rs), nil
}

// MigrateDown rolls back the applied migrations above version to; with to
// below 0 it rolls back only the latest one. It runs the Down sections of
// this binary's own migrations, so a database is rolled back with the
// binary that migrated it up (the newer one), before the older binary is
// deployed again.
func (d *DB) MigrateDown(ctx context.Context, to int64) ([]MigrationStep, error) {
	c, err := d.ReadCompat(ctx)
	if err != nil {
		return nil, err
	}
	if own := EmbeddedSchema(d.Dialect); c.Database > own {
		return nil, fmt.Errorf("migrations: the database is at schema %d, which this binary (schema %d) does not know: "+
			"roll it back with the release that applied it (its `threadengine migrate down --to %d`)", c.Database, own, own)
	}
	p, err := d.provider(ctx)
	if err != nil {
		return nil, err
	}
	if to < 0 {
		r, err := p.Down(ctx)
		if r != nil {
			return steps([]*goose.MigrationResult{r}), err
		}
		if err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
		return nil, nil
	}
	rs, err := p.DownTo(ctx, to)
	if err != nil {
		return steps(rs), fmt.Errorf("migrations: %w", err)
	}
	return steps(rs), nil
}

// MigrationState is one embedded migration and whether it is applied.
type MigrationState struct {
	Version   int64
	Name      string
	Applied   bool
	AppliedAt time.Time
}

// MigrationStatus lists this binary's migrations and their state in the
// database.
func (d *DB) MigrationStatus(ctx context.Context) ([]MigrationState, error) {
	p, err := d.provider(ctx)
	if err != nil {
		return nil, err
	}
	st, err := p.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	out := make([]MigrationState, 0, len(st))
	for _, s := range st {
		out = append(out, MigrationState{Version: s.Source.Version, Name: s.Source.Path,
			Applied: s.State == goose.StateApplied, AppliedAt: s.AppliedAt})
	}
	return out, nil
}
