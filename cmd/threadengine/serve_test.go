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
		os.Unsetenv("THREADENGINE_TEST_POSTGRES_URL") // an unknown config key to serve
		t.Cleanup(func() { os.Setenv("THREADENGINE_TEST_POSTGRES_URL", v) })
	}
	dir := t.TempDir()
	env, addressFile := enginetest.AnyPort(t)
	for _, kv := range append(env, "THREADENGINE_DATABASE__URL=sqlite://"+filepath.Join(dir, "te.db"),
		"THREADENGINE_SECURITY__HASH_CHAIN_SECRET=0123456789abcdef0123456789abcdef", "THREADENGINE_LOG__LEVEL=warn") {
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
	addr := enginetest.BoundAddr(t, addressFile)
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("the address written, %s, does not answer: %v", addr, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET http://%s/healthz: %d", addr, resp.StatusCode)
	}
}
