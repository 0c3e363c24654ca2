package ops

import (
	"context"
	"time"
)

// every runs fn now and then every interval until ctx ends: the loop of
// the background sweeps (retention, audit retention, alerts).
func every(ctx context.Context, interval time.Duration, fn func(context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		fn(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
