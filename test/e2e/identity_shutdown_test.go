package e2e

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/test/enginetest"
)

// TestShutdownDrainsInFlightRequests is what SIGTERM does in `serve`: stop
// accepting, let running requests finish, then close the store.
func TestShutdownDrainsInFlightRequests(t *testing.T) {
	t.Parallel()
	e := enginetest.Start(t, sqldb.SQLite)
	started, release := make(chan struct{}), make(chan struct{})
	var finished atomic.Bool
	e.Server.Echo.GET("/test/slow", func(c echo.Context) error {
		close(started)
		<-release // held until shutdown has begun
		finished.Store(true)
		return c.String(http.StatusOK, "done")
	})
	type result struct {
		status int
		err    error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := http.Get(e.URL + "/test/slow")
		if err != nil {
			res <- result{err: err}
			return
		}
		resp.Body.Close()
		res <- result{status: resp.StatusCode}
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- e.Server.Shutdown(ctx) }()
	// Shutdown has begun once new connections are refused; only then is the
	// running request let finish, so Shutdown returning with the request
	// unfinished means it did not wait for it (whatever the machine's speed).
	pollUntil(t, "the listener closed", func() bool {
		c, err := net.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	close(release)
	if err := <-shut; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if !finished.Load() {
		t.Fatal("shutdown returned before the in-flight request finished")
	}
	if r := <-res; r.err != nil || r.status != http.StatusOK {
		t.Fatalf("in-flight request: %+v", r)
	}
	if _, err := http.Get(e.URL + "/healthz"); err == nil {
		t.Fatal("server still accepts connections after shutdown")
	}
}

// Shutdown closes open WebSockets with a close frame (1001) before the store
// closes, instead of leaving them open to answer "internal error".
func TestShutdownClosesOpenSockets(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		e := enginetest.Start(t, d)
		c := dialWS(t, e)
		c.ok(map[string]any{"action": "connect", "apiKey": e.AdminKey})
		c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})
		ctx, cancel := context.WithTimeout(context.Background(), answerBound)
		defer cancel()
		if err := e.Server.Shutdown(ctx); err != nil {
			t.Fatalf("shutdown: %v", err)
		}
		select {
		case <-c.closed:
		case <-time.After(answerBound):
			t.Fatalf("socket still open %v after Shutdown returned", answerBound)
		}
		if st := c.closeStatus(); st != websocket.StatusGoingAway {
			t.Fatalf("close status %v, want 1001 going away", st)
		}
	})
}
