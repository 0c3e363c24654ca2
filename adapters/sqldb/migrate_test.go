package sqldb_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
)

// A database migrated by an in-between build (1 and 3 applied) meets a
// release that merged 2 below 3: the engine's migrator applies 2 instead of
// refusing to start over a "missing" migration.
func TestMigrateAppliesAMigrationMergedOutOfOrder(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		db, err := sqldb.OpenWith(ctx, sqldbtest.URL(t, d), sqldb.OpenOptions{NoMigrate: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		mig := func(table string) *fstest.MapFile {
			return &fstest.MapFile{Data: []byte("-- +goose Up\nCREATE TABLE " + table + " (id INTEGER);\n-- +goose Down\nDROP TABLE " + table + ";\n")}
		}
		before := fstest.MapFS{"00001_a.sql": mig("ooo_a"), "00003_c.sql": mig("ooo_c")}
		p, err := db.ProviderFS(ctx, before)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Up(ctx); err != nil {
			t.Fatal(err)
		}
		after := fstest.MapFS{"00001_a.sql": mig("ooo_a"), "00002_b.sql": mig("ooo_b"), "00003_c.sql": mig("ooo_c")}
		if p, err = db.ProviderFS(ctx, after); err != nil {
			t.Fatal(err)
		}
		rs, err := p.Up(ctx)
		if err != nil {
			t.Fatalf("up with a migration merged below the applied ones: %v", err)
		}
		if len(rs) != 1 || rs[0].Source.Version != 2 {
			t.Fatalf("applied %v, want only version 2", rs)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO ooo_b (id) VALUES (1)`); err != nil {
			t.Fatalf("the late migration's table: %v", err)
		}
	})
}
