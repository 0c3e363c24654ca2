package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/test/enginetest"
)

// TestShutdownDrainsInFlightRequests is what SIGTERM does in `serve`: stop
// accepting, let running requests finish, then close the store.
func TestShutdownDrainsInFlightRequests(t *testing.T) {
	e := enginetest.Start(t, sqldb.SQLite)
	started := make(chan struct{})
	e.Server.Echo.GET("/test/slow", func(c echo.Context) error {
		close(started)
		time.Sleep(300 * time.Millisecond)
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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	begin := time.Now()
	if err := e.Server.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if waited := time.Since(begin); waited < 200*time.Millisecond {
		t.Fatalf("shutdown returned after %v, before the request finished", waited)
	}
	if r := <-res; r.err != nil || r.status != http.StatusOK {
		t.Fatalf("in-flight request: %+v", r)
	}
	if _, err := http.Get(e.URL + "/healthz"); err == nil {
		t.Fatal("server still accepts connections after shutdown")
	}
}
