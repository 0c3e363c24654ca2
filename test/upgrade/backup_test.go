package upgrade

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/test/enginetest"
)

// chains lists every thread's id and whether its hash chain verifies, with
// the page query of the restore runbook (docs/operators/running.md).
func chains(t *testing.T, e *enginetest.Engine) map[string]bool {
	t.Helper()
	resp, body := e.Do(t, http.MethodPost, "/graphql", e.AdminKey,
		map[string]any{"query": `{ threads(limit: 20, offset: 0, order: ASC) { totalCount threads { id hashChainVerified } } }`})
	var out struct {
		Data struct {
			Threads struct {
				Threads []struct {
					ID       string `json:"id"`
					Verified *bool  `json:"hashChainVerified"`
				} `json:"threads"`
			} `json:"threads"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("threads: %d %s", resp.StatusCode, body)
	}
	m := map[string]bool{}
	for _, th := range out.Data.Threads.Threads {
		m[th.ID] = th.Verified != nil && *th.Verified
	}
	return m
}

// writeThread records a thread with one step through the SDK protocol; it
// fails the test unless the write was acknowledged.
func writeThread(t *testing.T, e *enginetest.Engine, label string) {
	t.Helper()
	if o, why := writeTo(strings.TrimPrefix(e.URL, "http://"), e.AdminKey, &writeOp{label: label}); o != written {
		t.Fatalf("write %s: %d %s", label, o, why)
	}
}

// restoredAs starts an engine on the restored database and signs in with the
// original owner's key (it is in the backup).
func restoredAs(t *testing.T, d sqldb.Dialect, dbURL string, owner *enginetest.Engine) *enginetest.Engine {
	t.Helper()
	r := enginetest.Start(t, d, enginetest.WithoutOwner(), enginetest.WithDatabase(dbURL))
	r.AdminKey = owner.AdminKey
	return r
}

func wantRestored(t *testing.T, before map[string]bool, r *enginetest.Engine) {
	t.Helper()
	if len(before) != 2 {
		t.Fatalf("threads before the backup: %v, want the two written", before)
	}
	for id, ok := range before {
		if !ok {
			t.Fatalf("thread %s does not verify before the backup", id)
		}
	}
	after := chains(t, r)
	if len(after) != len(before) {
		t.Fatalf("restored threads %v, want those of the backup %v", after, before)
	}
	for id := range before {
		if !after[id] {
			t.Fatalf("thread %s missing or its chain does not verify after the restore: %v", id, after)
		}
	}
}

// The SQLite runbook: an online `.backup` of a serving engine's WAL-mode
// database restores into an engine whose chains verify, without the
// writes made after the backup.
func TestSQLiteBackupRestore(t *testing.T) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Skip("the sqlite3 command-line shell is not installed (Debian package sqlite3)")
	}
	t.Parallel()
	e := enginetest.Start(t, sqldb.SQLite)
	writeThread(t, e, "before-1")
	writeThread(t, e, "before-2")
	before := chains(t, e)
	src := strings.TrimPrefix(e.Config.Database.URL, "sqlite://")
	backup := filepath.Join(t.TempDir(), "backup.db")
	if out, err := exec.Command("sqlite3", src, ".backup '"+backup+"'").CombinedOutput(); err != nil {
		t.Fatalf("sqlite3 .backup: %v %s", err, out)
	}
	writeThread(t, e, "after-backup") // not in the backup
	wantRestored(t, before, restoredAs(t, sqldb.SQLite, "sqlite://"+backup, e))
}

// The PostgreSQL runbook: pg_dump of a serving engine's database, restored
// with pg_restore into a new database, serves with verifying chains.
func TestPostgresBackupRestore(t *testing.T) {
	for _, tool := range []string{"pg_dump", "pg_restore"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	t.Parallel()
	e := enginetest.Start(t, sqldb.Postgres) // skips without the test server
	writeThread(t, e, "before-1")
	writeThread(t, e, "before-2")
	before := chains(t, e)
	u, err := url.Parse(e.Config.Database.URL)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	dump := filepath.Join(t.TempDir(), "threadengine.dump")
	conn := *u
	q := conn.Query()
	q.Del("search_path")
	conn.RawQuery = q.Encode()
	if out, err := exec.Command("pg_dump", "--format=custom", "--schema="+schema, "--file="+dump, conn.String()).CombinedOutput(); err != nil {
		t.Fatalf("pg_dump: %v %s", err, out)
	}
	writeThread(t, e, "after-backup")

	// A new database beside the test one, dropped at the end.
	admin, err := sqlx.Open("postgres", conn.String())
	if err != nil {
		t.Fatal(err)
	}
	dbName := "restore_" + strings.TrimPrefix(schema, "t_")
	if _, err := admin.Exec("CREATE DATABASE " + dbName); err != nil {
		t.Fatal(err)
	}
	restoredURL := *u
	restoredURL.Path = "/" + dbName
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE "+dbName+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", dbName, err)
		}
		admin.Close()
	})
	target := restoredURL
	q = target.Query()
	q.Del("search_path")
	target.RawQuery = q.Encode()
	// A dump of one schema does not carry the pg_trgm extension the ref
	// search index needs (docs/operators/running.md): create it first.
	restoredDB, err := sqlx.Open("postgres", target.String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := restoredDB.Exec("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public"); err != nil {
		t.Fatal(err)
	}
	restoredDB.Close()
	if out, err := exec.Command("pg_restore", "--no-owner", "--dbname="+target.String(), dump).CombinedOutput(); err != nil {
		t.Fatalf("pg_restore: %v %s", err, out)
	}
	wantRestored(t, before, restoredAs(t, sqldb.Postgres, restoredURL.String(), e))
}
