package sqldb_test

import (
	"context"
	"testing"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
)

func TestOpenMigratesBothDialects(t *testing.T) {
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			db := sqldbtest.Open(t, d)
			var n int
			if err := db.GetContext(context.Background(), &n, "SELECT COUNT(*) FROM users"); err != nil {
				t.Fatalf("users table missing after migration: %v", err)
			}
			// Migrating twice is a no-op.
			if err := db.Migrate(context.Background()); err != nil {
				t.Fatalf("second migrate: %v", err)
			}
		})
	}
}

func TestOpenRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"mysql://x", "postgres://u@127.0.0.1/db"} {
		if _, err := sqldb.Open(context.Background(), u); err == nil {
			t.Errorf("Open(%q) succeeded, want error naming database.url", u)
		}
	}
}
