// Package enginetest starts a real engine on a loopback port for end-to-end
// tests, on a fresh database of the requested dialect.
package enginetest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/server"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
)

// Clock is a settable clock shared with the engine.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock starts at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t.UTC()} }

// Now returns the current fake time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// Engine is a running engine under test.
type Engine struct {
	URL    string // http://127.0.0.1:port
	Server *server.Server
	Clock  *Clock
	Config config.Config
}

// Option adjusts the config or options before start.
type Option func(*config.Config, *server.Options)

// WithConfig edits the configuration.
func WithConfig(fn func(*config.Config)) Option {
	return func(c *config.Config, _ *server.Options) { fn(c) }
}

// Start runs an engine on 127.0.0.1:0 with a fresh database of dialect d and a
// fake clock starting now; it stops when the test ends.
func Start(t testing.TB, d sqldb.Dialect, opts ...Option) *Engine {
	t.Helper()
	cfg := config.Defaults()
	cfg.Database.URL = sqldbtest.URL(t, d)
	cfg.Server.Listen = "127.0.0.1:0"
	cfg.Security.HashChainSecret = "test-hash-chain-secret-0123456789abcdef"
	clock := NewClock(time.Now())
	o := server.Options{Clock: clock, DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, fn := range opts {
		fn(&cfg, &o)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	if cfg.Server.PublicURL == "" {
		cfg.Server.PublicURL = url
	}
	srv, err := server.New(context.Background(), cfg, o)
	if err != nil {
		l.Close()
		t.Fatalf("start engine: %v", err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return &Engine{URL: url, Server: srv, Clock: clock, Config: cfg}
}
