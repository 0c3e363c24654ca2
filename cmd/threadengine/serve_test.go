package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadengine/engine/test/enginetest"
)

// With server.listen on port 0 the engine picks a free port itself and
// writes the one it bound into server.address_file: what tests starting the
// engine as a process use instead of choosing a port that another process
// can take before the engine binds it.
func TestServeWritesTheBoundAddress(t *testing.T) {
	if v, ok := os.LookupEnv("THREADENGINE_TEST_POSTGRES_URL"); ok {
		os.Unsetenv("THREADENGINE_TEST_POSTGRES_URL") // this engine runs on SQLite; keep the harness variable out of its environment
		t.Cleanup(func() { os.Setenv("THREADENGINE_TEST_POSTGRES_URL", v) })
	}
	dir := t.TempDir()
	env, addressFile := enginetest.AnyPort(t)
	for _, kv := range append(env, "THREADENGINE_DATABASE__URL=sqlite://"+filepath.Join(dir, "te.db"),
		"THREADENGINE_SECURITY__HASH_CHAIN_SECRET=0123456789abcdef0123456789abcdef", "THREADENGINE_LOG__LEVEL=warn", "THREADENGINE_SERVER__PPROF_LISTEN=127.0.0.1:0") {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serve(ctx, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	bound := enginetest.BoundAddrs(t, addressFile) // server.listen's, then the profiler's
	if len(bound) != 2 {
		t.Fatalf("address file lists %q, want the engine's and the profiler's", bound)
	}
	for _, u := range []string{"http://" + bound[0] + "/healthz", "http://" + bound[1] + "/debug/pprof/"} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", u, resp.StatusCode)
		}
	}
}
