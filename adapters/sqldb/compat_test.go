package sqldb_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/domain"
)

// raiseFloor does what a contract migration does to schema_compat.
func raiseFloor(t *testing.T, db *sqldb.DB, floor int64) {
	t.Helper()
	// Through the embedded sqlx.DB: the gate may already refuse db's own writes.
	if _, err := db.DB.ExecContext(context.Background(), db.Rebind(`UPDATE schema_compat SET min_binary_schema = ? WHERE id = 1`), floor); err != nil {
		t.Fatal(err)
	}
}

func TestCompatGateBothDialects(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		u := sqldbtest.URL(t, d)
		db, err := sqldb.Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		schema := sqldb.EmbeddedSchema(d)
		if schema < sqldb.GateMigration || schema != sqldb.EmbeddedSchema(sqldb.Postgres) {
			t.Fatalf("embedded schema %d (postgres %d): both dialects carry the gate's migration and the same numbers",
				schema, sqldb.EmbeddedSchema(sqldb.Postgres))
		}
		c, changed, err := db.CheckCompat(ctx)
		if err != nil || changed || db.Refusal() != nil {
			t.Fatalf("fresh database: %+v changed=%v err=%v refusal=%v", c, changed, err, db.Refusal())
		}
		if c != (sqldb.Compat{Database: schema, MinBinary: sqldb.EmbeddedFloorOf(d), Binary: schema}) {
			t.Fatalf("fresh database window %+v", c)
		}
		write := func() error {
			return db.Tx(ctx, func(tx *sqlx.Tx) error {
				_, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO settings (key, value, updated_at, updated_by) VALUES (?, '1', CURRENT_TIMESTAMP, 'test')`), "k-tx")
				return err
			})
		}
		if err := write(); err != nil {
			t.Fatalf("write with the gate open: %v", err)
		}

		// A contract migration of a newer release raises the floor past
		// this binary: the next check closes the gate, and neither Tx nor
		// ExecContext reaches the database.
		raiseFloor(t, db, schema+1)
		c, changed, err = db.CheckCompat(ctx)
		if err != nil || !changed {
			t.Fatalf("after the floor rose: %+v changed=%v err=%v", c, changed, err)
		}
		refusal := db.Refusal()
		var de *domain.Error
		if !errors.As(refusal, &de) || de.Kind != domain.KindUnavailable || !errors.Is(refusal, sqldb.ErrIncompatible) ||
			!strings.Contains(de.Message, "older than its database allows") {
			t.Fatalf("refusal = %v", refusal)
		}
		if err := write(); !errors.Is(err, sqldb.ErrIncompatible) {
			t.Fatalf("Tx with the gate closed: %v", err)
		}
		if _, err := db.ExecContext(ctx, db.Rebind(`INSERT INTO settings (key, value, updated_at, updated_by) VALUES (?, '1', CURRENT_TIMESTAMP, 'test')`), "k-exec"); !errors.Is(err, sqldb.ErrIncompatible) {
			t.Fatalf("ExecContext with the gate closed: %v", err)
		}
		var n int
		if err := db.GetContext(ctx, &n, `SELECT COUNT(*) FROM settings WHERE key IN ('k-tx', 'k-exec')`); err != nil || n != 1 {
			t.Fatalf("rows written: %d, %v (want only the one written while open)", n, err)
		}
		if _, changed, _ := db.CheckCompat(ctx); changed {
			t.Fatal("a second check with nothing changed reported a change")
		}

		// The floor's Down (a rollback) opens it again.
		raiseFloor(t, db, 1)
		if _, changed, err := db.CheckCompat(ctx); err != nil || !changed || db.Refusal() != nil {
			t.Fatalf("after the floor fell back: changed=%v err=%v refusal=%v", changed, err, db.Refusal())
		}
		db.Close()

		// The same code claiming to be an older release that the floor
		// still allows (an expand step: previous release beside this one)
		// serves; one below the floor opens but refuses from the start.
		older, err := sqldb.OpenWith(ctx, u, sqldb.OpenOptions{BinarySchema: schema - 1})
		if err != nil {
			t.Fatal(err)
		}
		if older.Refusal() != nil {
			t.Fatalf("previous release on an expanded database refused: %v", older.Refusal())
		}
		raiseFloor(t, older, schema)
		older.Close()
		older, err = sqldb.OpenWith(ctx, u, sqldb.OpenOptions{BinarySchema: schema - 1})
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(older.Refusal(), sqldb.ErrIncompatible) {
			t.Fatalf("binary below the floor: refusal %v", older.Refusal())
		}
		older.Close()

		// A database rolled back under a binary (schema below the binary's)
		// is refused too: this binary may use tables that are gone.
		newer, err := sqldb.OpenWith(ctx, u, sqldb.OpenOptions{BinarySchema: schema + 1})
		if err != nil {
			t.Fatal(err)
		}
		defer newer.Close()
		if r := newer.Refusal(); !errors.Is(r, sqldb.ErrIncompatible) || !strings.Contains(r.Error(), "rolled back under it") {
			t.Fatalf("binary newer than the database: refusal %v", r)
		}
	})
}

func TestMigrateDownAndUp(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		db, err := sqldb.OpenWith(ctx, sqldbtest.URL(t, d), sqldb.OpenOptions{NoMigrate: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		st, err := db.MigrationStatus(ctx)
		if err != nil || len(st) == 0 || st[0].Applied {
			t.Fatalf("status of an empty database: %v %v", st, err)
		}
		if _, err := db.MigrateUp(ctx, sqldb.GateMigration-1); err != nil {
			t.Fatal(err)
		}
		c, err := db.ReadCompat(ctx)
		if err != nil || c.Database >= sqldb.GateMigration || c.MinBinary != 1 {
			t.Fatalf("before the gate's migration: %+v %v", c, err)
		}
		if c.Err() == nil {
			t.Fatal("a database older than the binary passed the gate")
		}
		steps, err := db.MigrateUp(ctx, 0)
		if err != nil || len(steps) == 0 || steps[len(steps)-1].Version != sqldb.EmbeddedSchema(d) {
			t.Fatalf("up: %v %v", steps, err)
		}
		if c, err := db.ReadCompat(ctx); err != nil || c.Err() != nil {
			t.Fatalf("after up: %+v %v", c, err)
		}
		// down without a target rolls back only the latest migration.
		steps, err = db.MigrateDown(ctx, -1)
		if err != nil || len(steps) != 1 || steps[0].Direction != "down" {
			t.Fatalf("down one: %v %v", steps, err)
		}
		// That was 00109's (an index): the floor stays 00108's.
		if c, err := db.ReadCompat(ctx); err != nil || c.Database != 108 || c.MinBinary != 102 {
			t.Fatalf("after 00109's Down: %+v %v, want schema 108 and floor 102", c, err)
		}
		if _, err := db.MigrateDown(ctx, 107); err != nil {
			t.Fatal(err)
		}
		// 00108's Down (a contract step) restores the floor before it, 101,
		// and the column it dropped.
		if c, err := db.ReadCompat(ctx); err != nil || c.Database >= 108 || c.MinBinary != 101 {
			t.Fatalf("after 00108's Down: %+v %v, want a schema below 108 and floor 101", c, err)
		}
		if _, err := db.DB.ExecContext(ctx, `SELECT COUNT(latest_context) FROM thread_step_states`); err != nil {
			t.Fatalf("after 00108's Down: %v", err)
		}
		// 00102's Down (a contract step) restores the floor before it: 92
		// on PostgreSQL, SQLite's 99 that 00099 keeps.
		if _, err := db.MigrateDown(ctx, 101); err != nil {
			t.Fatal(err)
		}
		want92 := int64(92)
		if d == sqldb.SQLite {
			want92 = 99
		}
		if c, err := db.ReadCompat(ctx); err != nil || c.Database != 101 || c.MinBinary != want92 {
			t.Fatalf("after 00102's Down: %+v %v, want schema 101 and floor %d", c, err, want92)
		}
		// 00100's Down (a contract step) restores the floor before it: 1 on
		// PostgreSQL, SQLite's 99 that 00099 keeps.
		if _, err := db.MigrateDown(ctx, 99); err != nil {
			t.Fatal(err)
		}
		want := int64(1)
		if d == sqldb.SQLite {
			want = 99
		}
		if c, err := db.ReadCompat(ctx); err != nil || c.Database != 99 || c.MinBinary != want {
			t.Fatalf("after 00100's Down: %+v %v, want schema 99 and floor %d", c, err, want)
		}
		if _, err := db.MigrateDown(ctx, sqldb.GateMigration-1); err != nil {
			t.Fatal(err)
		}
		if c, err := db.ReadCompat(ctx); err != nil || c.Database != sqldb.GateMigration-1 && c.Database >= sqldb.GateMigration {
			t.Fatalf("after down below the gate: %+v %v", c, err)
		}
		if _, err := db.MigrateUp(ctx, 0); err != nil {
			t.Fatal(err)
		}
		st, err = db.MigrationStatus(ctx)
		if err != nil || !st[len(st)-1].Applied {
			t.Fatalf("status after up: %v %v", st, err)
		}
	})
}

// Replicas (or a migration job and a replica) starting together on a fresh
// PostgreSQL schema apply each migration once: the second waits for the
// first's advisory lock instead of failing on a duplicate table.
func TestConcurrentMigrationsPostgres(t *testing.T) {
	t.Parallel()
	u := sqldbtest.URL(t, sqldb.Postgres)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() {
			db, err := sqldb.Open(context.Background(), u)
			if err == nil {
				db.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d: %v", i, err)
		}
	}
}
