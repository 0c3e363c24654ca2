package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

const cliContract = `contract_name: cli_flow
version: %s
entry_points: [a]
steps:
  - {id: a, owner: svc}
  - {id: b, owner: svc}
transitions: [{from: a, to: b}]
terminal_steps: [b]
`

func writeContract(t *testing.T, dir, name, version string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(strings.Replace(cliContract, "%s", version, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestContractsCommand(t *testing.T) {
	e := enginetest.Start(t, sqldb.SQLite)
	_, viewerKey := e.NewUser(t, domain.RoleViewer)
	dir := t.TempDir()
	v1 := writeContract(t, dir, "v1.yaml", "1")
	v2 := writeContract(t, dir, "v2.yaml", "2")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("contract_name: x\nversion: 0\nsteps: [{id: a, owner: q}]\nparties: [p]\nbogus: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("THREADENGINE_URL", "")
	t.Setenv("THREADENGINE_API_KEY", "")

	run := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		err := contractsCmd(context.Background(), args, &out, &errOut)
		return out.String(), errOut.String(), err
	}

	// Flags may follow the file.
	out, stderr, err := run("apply", v1, "--url", e.URL, "--api-key", e.AdminKey)
	if err != nil || !strings.Contains(out, "contract cli_flow version 1 stored (2 steps)") {
		t.Fatalf("apply v1: %v\n%s%s", err, out, stderr)
	}
	// The same version again is refused by the engine.
	_, _, err = run("apply", "--url", e.URL, "--api-key", e.AdminKey, v1)
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("apply v1 twice: %v", err)
	}
	// Environment defaults.
	t.Setenv("THREADENGINE_URL", e.URL)
	t.Setenv("THREADENGINE_API_KEY", e.AdminKey)
	if out, _, err := run("apply", v2); err != nil || !strings.Contains(out, "version 2 stored") {
		t.Fatalf("apply v2 from env: %v %s", err, out)
	}
	// Every problem is printed, and the command fails.
	_, stderr, err = run("apply", bad)
	if !errors.Is(err, errProblemsPrinted) {
		t.Fatalf("apply bad: err %v", err)
	}
	for _, want := range []string{"version:", "entry_points:", "steps[0].owner:", "bogus:"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("problems output lacks %q:\n%s", want, stderr)
		}
	}
	// A viewer may not upload.
	_, _, err = run("apply", v2, "--api-key", viewerKey)
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("viewer apply: %v", err)
	}
	if out, _, err := run("list"); err != nil || !strings.Contains(out, "cli_flow") || !strings.Contains(out, "      2") {
		t.Errorf("list: %v\n%s", err, out)
	}
	if out, _, err := run("get", "cli_flow", "--version", "1"); err != nil || out != strings.Replace(cliContract, "%s", "1", 1) {
		t.Errorf("get v1: %v\n%q", err, out)
	}
	if _, _, err := run("get", "nope"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("get unknown: %v", err)
	}

	// check works offline.
	t.Setenv("THREADENGINE_URL", "http://127.0.0.1:1")
	if out, _, err := run("check", v1); err != nil || !strings.Contains(out, "is valid") {
		t.Errorf("check v1: %v %s", err, out)
	}
	if _, stderr, err := run("check", bad); !errors.Is(err, errProblemsPrinted) || !strings.Contains(stderr, "bogus") {
		t.Errorf("check bad: %v %s", err, stderr)
	}
	// Gherkin too, each problem with its line.
	feature := filepath.Join(dir, "pay.feature")
	if err := os.WriteFile(feature, []byte("Feature: pay\nRule: Pay\n  When step \"pay\" is submitted\n  Then owner must be \"shop\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, _, err := run("check", feature); err != nil || !strings.Contains(out, "contract pay version 1 is valid") {
		t.Errorf("check feature: %v %s", err, out)
	}
	if err := os.WriteFile(feature, []byte("Feature: pay\nRule: Pay\n  When step \"pay\" is submitted\n  Then owner is \"shop\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := run("check", feature); !errors.Is(err, errProblemsPrinted) || !strings.Contains(stderr, "line 4: source: unsupported step constraint: owner is \"shop\"") {
		t.Errorf("check bad feature: %v %s", err, stderr)
	}
	// Unreachable engine and usage errors.
	if _, _, err := run("list"); err == nil || !strings.Contains(err.Error(), "cannot reach") {
		t.Errorf("unreachable: %v", err)
	}
	var ue usageError
	for _, args := range [][]string{{}, {"apply"}, {"frob"}, {"get"}, {"list", "x"}, {"apply", v1, "--nope"}} {
		if _, _, err := run(args...); !errors.As(err, &ue) {
			t.Errorf("%v: err %v, want a usage error", args, err)
		}
	}
	t.Setenv("THREADENGINE_API_KEY", "")
	if _, _, err := run("list"); !errors.As(err, &ue) {
		t.Errorf("no key: %v", err)
	}
	if got := runMain(t, "contracts", "check", bad); got != 1 {
		t.Errorf("exit code for a bad contract = %d, want 1", got)
	}
}

// runMain runs the real entry point (exit codes).
func runMain(t *testing.T, args ...string) int {
	t.Helper()
	return run(args)
}
