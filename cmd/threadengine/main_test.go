package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/threadengine/engine/test/enginetest"
)

func TestRunExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("server:\n  listen: nonsense\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	typo := filepath.Join(dir, "typo.yaml")
	if err := os.WriteFile(typo, []byte("servr:\n  listen: 127.0.0.1:1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	idle := filepath.Join(dir, "idle.yaml") // an address nothing listens on
	if err := os.WriteFile(idle, []byte("server:\n  listen: "+enginetest.FreeAddr(t)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The test harness's THREADENGINE_TEST_POSTGRES_URL shares the config
	// prefix; these engines run on SQLite, so it is kept out of their
	// environment.
	if v, ok := os.LookupEnv("THREADENGINE_TEST_POSTGRES_URL"); ok {
		os.Unsetenv("THREADENGINE_TEST_POSTGRES_URL")
		t.Cleanup(func() { os.Setenv("THREADENGINE_TEST_POSTGRES_URL", v) })
	}
	t.Setenv("THREADENGINE_DATABASE__URL", "sqlite://"+filepath.Join(dir, "te.db"))
	t.Setenv("THREADENGINE_SECURITY__HASH_CHAIN_SECRET", "0123456789abcdef0123456789abcdef")
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"version", []string{"version"}, 0},
		{"unknown command", []string{"frobnicate"}, 2},
		{"bad flag", []string{"--nope"}, 2},
		{"invalid config", []string{"--config", bad, "bootstrap-owner", "--email", "a@example.com"}, 1},
		{"unknown config key", []string{"--config", typo, "serve"}, 1},
		{"missing config file", []string{"--config", filepath.Join(dir, "none.yaml"), "serve"}, 1},
		{"bootstrap without email", []string{"bootstrap-owner"}, 2},
		{"bootstrap", []string{"bootstrap-owner", "--email", "owner@example.com", "--name", "Owner"}, 0},
		{"bootstrap twice", []string{"bootstrap-owner", "--email", "other@example.com"}, 1},
		{"migrate status", []string{"migrate", "status"}, 0},
		{"migrate up", []string{"migrate", "up"}, 0},
		{"migrate without a command", []string{"migrate"}, 2},
		{"migrate unknown command", []string{"migrate", "sideways"}, 2},
		{"migrate bad target", []string{"migrate", "down", "--to", "-3"}, 2},
		{"migrate extra argument", []string{"migrate", "up", "now"}, 2},
		{"healthcheck without an engine", []string{"--config", idle, "healthcheck", "--timeout", "2s"}, 1},
		{"healthcheck bad flag", []string{"healthcheck", "--nope"}, 2},
		{"rebuild step stats", []string{"rebuild-step-stats"}, 0},
		{"rebuild step stats extra argument", []string{"rebuild-step-stats", "now"}, 2},
		{"rebuild process map", []string{"rebuild-process-map"}, 0},
		{"rebuild process map extra argument", []string{"rebuild-process-map", "now"}, 2},
	}
	for _, c := range cases {
		if got := run(c.args); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
}
