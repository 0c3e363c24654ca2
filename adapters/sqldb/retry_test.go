package sqldb

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// The back-off between attempts ends as soon as the caller's context does:
// a client that went away does not keep a retry loop sleeping.
func TestBackOffHonoursTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		done := make(chan bool)
		go func() { done <- backOff(ctx, time.Hour) }()
		synctest.Wait() // backOff is waiting
		cancel()
		if ran := <-done; ran || time.Since(start) != 0 {
			t.Fatalf("backOff ran its course (%v) or waited %v after the context ended", ran, time.Since(start))
		}
		if ran := backOff(context.Background(), 5*time.Millisecond); !ran || time.Since(start) != 5*time.Millisecond {
			t.Fatalf("backOff without cancellation: %v after %v", ran, time.Since(start))
		}
	})
}
