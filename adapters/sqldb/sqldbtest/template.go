package sqldbtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/db"
)

// A PostgreSQL test schema is a copy of one migrated template schema
// instead of a run of every migration: the template is migrated once,
// dumped with pg_dump (schema and rows, e.g. goose's version table) and
// the dump is replayed into each new schema in one batch. The dump is kept
// in the temp dir under a key of the migrations, the server's and
// pg_dump's versions, so the test packages of a run (and the next run)
// migrate once in all. Replaying took 0.9-1.7 s where migrating took
// 2.1-4.1 s on the same machine at load 42 (docs/contributors/testing.md).

// schemaToken stands for the schema's name in a kept dump.
const schemaToken = "threadengine_test_schema_token"

var pgTemplate struct {
	once   sync.Once
	script string // the dump, with schemaToken for the schema's name
	err    error
}

// templateScript returns the SQL that creates a migrated schema named
// schemaToken, making (and keeping) it on first use.
func templateScript(base string) (string, error) {
	pgTemplate.once.Do(func() {
		pgTemplate.script, pgTemplate.err = loadTemplate(base)
	})
	return pgTemplate.script, pgTemplate.err
}

func loadTemplate(base string) (string, error) {
	pgDump, err := exec.LookPath("pg_dump")
	if err != nil {
		return "", fmt.Errorf("pg_dump not found: %v", err)
	}
	dumpVersion, err := exec.Command(pgDump, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("pg_dump --version: %v", err)
	}
	admin, err := sqlx.Open("postgres", base)
	if err != nil {
		return "", err
	}
	defer admin.Close()
	var serverVersion string
	if err := admin.Get(&serverVersion, `SHOW server_version_num`); err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n", dumpVersion, serverVersion)
	names, err := fs.Glob(db.Postgres, "postgres/*.sql")
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := fs.ReadFile(db.Postgres, n)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", n, len(b))
		h.Write(b)
	}
	kept := filepath.Join(os.TempDir(), "threadengine-test-pg-"+hex.EncodeToString(h.Sum(nil))[:24]+".sql")
	if b, err := os.ReadFile(kept); err == nil && len(b) > 0 {
		return string(b), nil
	}

	// Migrate a template schema, dump it, drop it.
	name := "tmpl_" + randomHex(8)
	if _, err := admin.Exec("CREATE SCHEMA " + name); err != nil {
		return "", err
	}
	defer func() { _, _ = admin.Exec("DROP SCHEMA " + name + " CASCADE") }()
	pu, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	q := pu.Query()
	q.Set("search_path", name)
	pu.RawQuery = q.Encode()
	d, err := sqldb.Open(context.Background(), pu.String())
	if err != nil {
		return "", fmt.Errorf("migrate the template schema: %w", err)
	}
	d.Close()
	out, err := exec.Command(pgDump, "--schema="+name, "--no-owner", "--no-privileges", "--inserts", base).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		return "", fmt.Errorf("pg_dump: %v %s", err, stderr)
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, `\`) { // psql meta-commands (\restrict) of newer pg_dumps
			continue
		}
		lines = append(lines, l)
	}
	script := strings.ReplaceAll(strings.Join(lines, "\n"), name, schemaToken)
	tmp, err := os.CreateTemp(filepath.Dir(kept), filepath.Base(kept)+".*")
	if err == nil {
		_, werr := tmp.WriteString(script)
		cerr := tmp.Close()
		if werr == nil && cerr == nil {
			_ = os.Rename(tmp.Name(), kept) // atomic: readers see all of it or nothing
		}
		_ = os.Remove(tmp.Name())
	}
	return script, nil
}
