package sdk_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/domain"
)

const (
	pythonSDKEnv = "THREADENGINE_PYTHON_SDK_DIR"
	pythonEnv    = "THREADENGINE_PYTHON"
	// pythonChecks is the number of checks python/gherkin.py makes; a run
	// that passes fewer skipped some.
	pythonChecks = 37
)

// TestPythonSDKGherkin: the unmodified Python SDK 0.4.0 against Gherkin
// contracts (content refusals with the field and rule, a cross-step
// equality, fresh approvals with two concurrent wait_for on two replicas on
// PostgreSQL), can/next before and after each step, and the SDK's reads with
// their defaults on a thread of 100 step identities and a 120-attempt step.
func TestPythonSDKGherkin(t *testing.T) {
	dir := os.Getenv(pythonSDKEnv)
	if dir == "" {
		t.Skipf("%s not set (the directory holding the SDK's threadify/ package; docs/contributors/testing.md)", pythonSDKEnv)
	}
	python := os.Getenv(pythonEnv)
	if python == "" {
		python = "python3"
	}
	script := repoFile(t, "python/gherkin.py")
	fixtures := repoFile(t, "../../domain/gherkin/testdata/threadify-gherkin")
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		e, b := gherkinEngines(t, d, fixtures)
		_, key := e.NewUser(t, domain.RoleMember)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, python, script)
		cmd.Env = append(os.Environ(), "ENGINE_A="+e.URL, "ENGINE_B="+b.URL, "API_KEY="+key, "STORE="+string(d))
		out := runJSON(t, cmd)

		if failed := toStrings(out["failed"]); len(failed) > 0 {
			for _, f := range failed {
				t.Errorf("python check failed: %s", f)
			}
		}
		if passed := toStrings(out["passed"]); len(passed) != pythonChecks {
			t.Errorf("%d python checks passed, want %d: %v", len(passed), pythonChecks, passed)
		}
		// Cross-checks in the database, not the script's own view: each of
		// the two wait_for grants and the unguarded third charge consumed its
		// own approval (three distinct approvals, none shared); the charge
		// without an approval then failed the thread.
		db := e.Server.DB
		var rows []struct {
			Invocation string `db:"invocation_id"`
			Fresh      string `db:"fresh_consumed"`
		}
		if err := db.Select(&rows, db.Rebind(`SELECT invocation_id, fresh_consumed FROM step_grants WHERE thread_id = ? AND fresh_consumed <> ''`),
			dig(out, "notes", "freshThread")); err != nil {
			t.Fatal(err)
		}
		waits, reports, approvals := 0, 0, map[string]bool{}
		for _, r := range rows {
			approvals[r.Fresh] = true
			switch {
			case strings.HasPrefix(r.Invocation, "inv-"):
				waits++
			case strings.HasPrefix(r.Invocation, "report:"):
				reports++
			}
		}
		if waits != 2 || reports != 1 || len(approvals) != 3 {
			t.Errorf("approvals consumed: %+v, want two wait_for grants and one report, each its own approval", rows)
		}
		var status string
		if err := db.Get(&status, db.Rebind(`SELECT status FROM threads WHERE id = ?`), dig(out, "notes", "freshThread")); err != nil || status != "failed" {
			t.Errorf("fresh thread %q (%v), want failed", status, err)
		}
	})
}
