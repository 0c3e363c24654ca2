package prommetrics

import (
	"context"
	"log/slog"
	"time"

	"github.com/threadengine/engine/domain"
)

// ActiveThreadCounter counts active threads by health in one bounded
// statement (it reads active threads only, through an index on status).
type ActiveThreadCounter interface {
	ActiveThreadsByHealth(ctx context.Context) (map[domain.HealthStatus]int, error)
}

// RunThreadGauges refreshes threadengine_threads_active from src now and
// then every interval until ctx ends: the gauge costs one query per
// interval and replica, never one per scrape. A failed read keeps the last
// values (and is logged once per failure streak).
func (m *Metrics) RunThreadGauges(ctx context.Context, src ActiveThreadCounter, interval time.Duration, log *slog.Logger) {
	if interval <= 0 {
		interval = time.Minute
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	failing := false
	for {
		counts, err := src.ActiveThreadsByHealth(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			log.Warn("thread gauges: count active threads", "err", err)
			failing = true
		case err == nil:
			failing = false
			for _, h := range domain.HealthStatuses {
				m.activeThreads.WithLabelValues(string(h)).Set(float64(counts[h]))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
