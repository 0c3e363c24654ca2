package threads

// The EndThread command: completes or cancels a thread (WebSocket threadEnd,
// closeThread).

import (
	"context"
	"encoding/json"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// EndThreadInput completes or cancels a thread.
type EndThreadInput struct {
	ThreadID string
	Role     string // the party the caller's connection acts as ("" if none declared)
	Status   string // completed | cancelled ("" is cancelled)
	// Reason is why (cancel): a string, or the caller's own object (SDKs
	// spread an object reason into the frame; the adapter strips transport
	// fields such as requestId before it gets here).
	Reason       string
	ReasonObject map[string]any
}

// EndThreadHandler completes or cancels a thread; one of the Commands.
type EndThreadHandler struct {
	threads   ports.ThreadUpdater
	publisher ports.NotificationPublisher
	clock     ports.Clock
	metrics   ports.ThreadMetrics
}

// NewEndThreadHandler builds EndThread.
func NewEndThreadHandler(threads ports.ThreadUpdater, publisher ports.NotificationPublisher, clock ports.Clock, metrics ports.ThreadMetrics) EndThreadHandler {
	return EndThreadHandler{threads: threads, publisher: publisher, clock: clock, metrics: metrics}
}

// Handle closes an active thread as completed or cancelled; the rules
// (owner only, idempotent repeat, closed threads, contract threads complete
// only through a terminal step) are domain.Thread.End's.
func (h EndThreadHandler) Handle(ctx context.Context, in EndThreadInput) (domain.Thread, error) {
	p, err := authz.Require(ctx, domain.PermThreadsWrite)
	if err != nil {
		return domain.Thread{}, err
	}
	status, err := domain.ParseEndStatus(in.Status)
	if err != nil {
		return domain.Thread{}, err
	}
	reason := EndReason(in.Reason, in.ReasonObject)
	var events []ports.NotificationRecord
	th, err := h.threads.UpdateThread(ctx, in.ThreadID, func(th *domain.Thread) (ports.ThreadEffects, error) {
		events = nil
		now := now(h.clock)
		changed, err := th.End(authz.Actor(p, in.Role), status, reason, now)
		if err != nil || !changed {
			return ports.ThreadEffects{}, err
		}
		msg := "Thread " + string(status)
		if reason != "" {
			msg += ": " + reason
		}
		ev := ThreadEvent(*th, status, msg, now)
		if reason != "" {
			ev.Details = map[string]any{"reason": reasonValue(in.Reason, in.ReasonObject)}
		}
		events = []ports.NotificationRecord{ev}
		return ports.ThreadEffects{Notifications: events}, nil
	})
	if err != nil {
		return domain.Thread{}, err
	}
	if len(events) > 0 {
		h.metrics.ThreadEnded(string(th.Status))
	}
	h.publisher.Published(ctx, events)
	return th, nil
}

// EndReason is the stored text of a cancel reason: the string as given, or
// the caller's object as JSON (keys sorted) when it sent one.
func EndReason(reason string, obj map[string]any) string {
	if len(obj) == 0 {
		return reason
	}
	b, err := json.Marshal(reasonValue(reason, obj))
	if err != nil {
		return reason
	}
	return string(b)
}

func reasonValue(reason string, obj map[string]any) any {
	if len(obj) == 0 {
		return reason
	}
	out := make(map[string]any, len(obj)+1)
	for k, v := range obj {
		out[k] = v
	}
	if reason != "" {
		out["reason"] = reason
	}
	return out
}
