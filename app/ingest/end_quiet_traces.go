package ingest

// The EndQuietTraces command: a trace thread ends (completed or failed, from
// its spans) once its root span has ended and no span arrived for the quiet
// period (otlp.trace_quiet_period). The engine runs it; it checks no
// permission. Replicas may run it at once: the thread's lock and
// domain.Thread.EndTrace (a no-op on a closed thread) end each once.

import (
	"context"
	"log/slog"
	"time"

	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// QuietTraceStore is what ending quiet traces reads and writes.
type QuietTraceStore interface {
	ports.QuietTraces
	ports.ThreadUpdater
	// ListActivities returns a thread's attempts (their span ids and
	// statuses), ordered by seq.
	ListActivities(ctx context.Context, threadID string) ([]ports.Activity, error)
}

// EndQuietTracesHandler ends quiet trace threads.
type EndQuietTracesHandler struct {
	store     QuietTraceStore
	publisher ports.NotificationPublisher
	clock     ports.Clock
	metrics   ports.ThreadMetrics
	quiet     time.Duration
	batch     int
}

// NewEndQuietTracesHandler builds EndQuietTraces; quiet <= 0 is
// domain.DefaultTraceQuietPeriod.
func NewEndQuietTracesHandler(store QuietTraceStore, publisher ports.NotificationPublisher, clock ports.Clock,
	metrics ports.ThreadMetrics, quiet time.Duration) EndQuietTracesHandler {
	if quiet <= 0 {
		quiet = domain.DefaultTraceQuietPeriod
	}
	if metrics == nil {
		metrics = ports.NopMetrics{}
	}
	return EndQuietTracesHandler{store: store, publisher: publisher, clock: clock, metrics: metrics, quiet: quiet, batch: 100}
}

// QuietPeriod is the period the handler waits for.
func (h EndQuietTracesHandler) QuietPeriod() time.Duration { return h.quiet }

// Handle ends every trace thread that is due; it returns how many it ended.
func (h EndQuietTracesHandler) Handle(ctx context.Context) (int, error) {
	ended := 0
	for {
		cutoff := now(h.clock).Add(-h.quiet)
		ids, err := h.store.QuietTraceThreads(ctx, cutoff, h.batch)
		if err != nil {
			return ended, err
		}
		progress := 0
		for _, id := range ids {
			ok, err := h.end(ctx, id)
			if err != nil {
				return ended, err
			}
			if ok {
				ended++
				progress++
			}
		}
		if len(ids) < h.batch || progress == 0 {
			return ended, nil
		}
	}
}

// end reads the thread's spans and ends it under its lock if it is (still)
// due.
func (h EndQuietTracesHandler) end(ctx context.Context, id string) (bool, error) {
	acts, err := h.store.ListActivities(ctx, id)
	if err != nil {
		if domain.KindOf(err) == domain.KindNotFound {
			return false, nil
		}
		return false, err
	}
	spans := spanNodes(acts)
	var events []ports.NotificationRecord
	th, err := h.store.UpdateThread(ctx, id, func(th *domain.Thread) (ports.ThreadEffects, error) {
		events = nil
		now := now(h.clock)
		if !th.EndTrace(spans, h.quiet, now) {
			return ports.ThreadEffects{}, nil
		}
		msg := "Thread " + string(th.Status) + ": its trace ended"
		if th.Error != "" {
			msg = "Thread failed: " + th.Error
		}
		events = []ports.NotificationRecord{threads.ThreadEvent(*th, th.Status, msg, now)}
		return ports.ThreadEffects{Notifications: events}, nil
	})
	if err != nil {
		if domain.KindOf(err) == domain.KindNotFound {
			return false, nil
		}
		return false, err
	}
	if len(events) == 0 {
		return false, nil
	}
	h.metrics.ThreadEnded(string(th.Status))
	h.publisher.Published(ctx, events)
	return true, nil
}

// spanNodes reads the spans back from the attempts OTLP recorded (their
// metadata carries the span ids, the error their status message); the
// latest attempt of a span wins.
func spanNodes(acts []ports.Activity) []domain.SpanNode {
	idx := map[string]int{}
	var out []domain.SpanNode
	for _, a := range acts {
		id, _ := a.Metadata["otel_span_id"].(string)
		if id == "" {
			continue
		}
		parent, _ := a.Metadata["otel_parent_span_id"].(string)
		n := domain.SpanNode{SpanID: id, ParentID: parent, StepName: a.StepName, Failed: domain.StepFailed(a.Status),
			Message: domain.StepError(a.Status, a.Metadata)}
		if a.FinishedAt != nil {
			n.End = *a.FinishedAt
		}
		if i, ok := idx[id]; ok {
			out[i] = n
			continue
		}
		idx[id] = len(out)
		out = append(out, n)
	}
	return out
}

// Run ends quiet traces every interval (a fraction of the quiet period)
// until ctx ends; the ticker is the standard library's, so a test under
// testing/synctest drives it with the bubble's time.
func (h EndQuietTracesHandler) Run(ctx context.Context, interval time.Duration, log *slog.Logger) {
	if interval <= 0 {
		interval = h.quiet / 3
	}
	if log == nil {
		log = slog.Default()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := h.Handle(ctx); err != nil && ctx.Err() == nil {
			log.Warn("ending quiet traces", "err", err, "ended", n)
		}
	}
}

// now is the thread use cases' clock: UTC, at the microsecond the stores keep.
func now(c ports.Clock) time.Time { return c.Now().UTC().Truncate(time.Microsecond) }
