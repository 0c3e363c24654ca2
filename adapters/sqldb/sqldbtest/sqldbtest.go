// Package sqldbtest gives tests a fresh, migrated database of each dialect:
// SQLite in a temp dir always, PostgreSQL (one new schema per test) when
// THREADENGINE_TEST_POSTGRES_URL is set.
package sqldbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq" // postgres driver for schema setup

	"github.com/threadengine/engine/adapters/sqldb"
)

// PostgresEnv names the variable holding the test server's URL.
const PostgresEnv = "THREADENGINE_TEST_POSTGRES_URL"

// Dialects lists the dialects to run a contract suite against. Postgres is
// included only when PostgresEnv is set; otherwise the skip is logged once per test.
func Dialects(t testing.TB) []sqldb.Dialect {
	ds := []sqldb.Dialect{sqldb.SQLite}
	if os.Getenv(PostgresEnv) != "" {
		ds = append(ds, sqldb.Postgres)
	} else {
		t.Logf("postgres: skipped (%s not set)", PostgresEnv)
	}
	return ds
}

// ForEachDialect runs fn once per dialect of Dialects, each as a parallel
// subtest named after the dialect: every run opens its own database (a
// SQLite file, a PostgreSQL schema), so they share nothing. Call it last in
// a test: the subtests run after the test function returns.
func ForEachDialect(t *testing.T, fn func(t *testing.T, d sqldb.Dialect)) {
	t.Helper()
	for _, d := range Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			fn(t, d)
		})
	}
}

// ForEachDB is ForEachDialect with a fresh migrated database of the dialect.
func ForEachDB(t *testing.T, fn func(t *testing.T, db *sqldb.DB)) {
	t.Helper()
	ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) { fn(t, Open(t, d)) })
}

// Open returns a fresh migrated database of the dialect, closed (and for
// Postgres, dropped) when the test ends. Postgres skips the test if PostgresEnv
// is unset.
func Open(t testing.TB, d sqldb.Dialect) *sqldb.DB {
	t.Helper()
	u := MigratedURL(t, d)
	db, err := sqldb.Open(context.Background(), u)
	if err != nil {
		t.Fatalf("open %s: %v", d, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// OpenAt returns a fresh database of the dialect migrated up to schema
// only, as a release of that schema left it, closed (and for Postgres,
// dropped) when the test ends: for tests of what a later migration meets.
// Postgres skips the test if PostgresEnv is unset.
func OpenAt(t testing.TB, d sqldb.Dialect, schema int64) *sqldb.DB {
	t.Helper()
	ctx := context.Background()
	db, err := sqldb.OpenWith(ctx, URL(t, d), sqldb.OpenOptions{NoMigrate: true})
	if err != nil {
		t.Fatalf("open %s: %v", d, err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.MigrateUp(ctx, schema); err != nil {
		t.Fatalf("migrate %s up to %d: %v", d, schema, err)
	}
	return db
}

// URL returns a database URL for a fresh, empty database of the dialect (not
// yet migrated), for tests of migrations and of processes that migrate.
func URL(t testing.TB, d sqldb.Dialect) string {
	t.Helper()
	return newURL(t, d, false)
}

// MigratedURL returns a database URL for a fresh database of the dialect
// with every migration applied, as the engine would leave it: on
// PostgreSQL a copy of one migrated template schema (template.go), made
// without running the migrations again; where that copy cannot be made
// (no pg_dump) the schema is empty and whoever opens it migrates it.
func MigratedURL(t testing.TB, d sqldb.Dialect) string {
	t.Helper()
	return newURL(t, d, true)
}

func newURL(t testing.TB, d sqldb.Dialect, migrated bool) string {
	t.Helper()
	switch d {
	case sqldb.Postgres:
		base := os.Getenv(PostgresEnv)
		if base == "" {
			t.Skipf("postgres: skipped (%s not set)", PostgresEnv)
		}
		schema := "t_" + randomHex(8)
		create := "CREATE SCHEMA " + schema
		if migrated {
			if script, err := templateScript(base); err != nil {
				t.Logf("postgres: migrating the schema (no template copy: %v)", err)
			} else {
				create = strings.ReplaceAll(script, schemaToken, schema)
			}
		}
		admin, err := sqlx.Open("postgres", base)
		if err != nil {
			t.Fatalf("postgres: %v", err)
		}
		if _, err := admin.Exec(create); err != nil {
			admin.Close()
			t.Fatalf("postgres: create schema: %v", err)
		}
		t.Cleanup(func() {
			_, _ = admin.Exec("DROP SCHEMA " + schema + " CASCADE")
			admin.Close()
		})
		pu, err := url.Parse(base)
		if err != nil {
			t.Fatalf("postgres url: %v", err)
		}
		q := pu.Query()
		q.Set("search_path", schema)
		// A commit does not wait for its WAL to reach the disk: the tests
		// kill engines, never the PostgreSQL server, so no committed row
		// can be lost, and a busy machine's disk waits drop out of every
		// PostgreSQL test (about a third of their time). "options" is
		// read by both lib/pq and libpq (pg_dump in test/upgrade); no
		// space in it, which a URL would carry as "+" and libpq not read.
		if q.Get("options") == "" {
			q.Set("options", "-csynchronous_commit=off")
		}
		if q.Get("sslmode") == "" {
			q.Set("sslmode", "disable")
		}
		pu.RawQuery = q.Encode()
		return pu.String()
	default:
		return "sqlite://" + filepath.Join(t.TempDir(), "test.db")
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
