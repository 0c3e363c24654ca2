package threads

// The StartThread command: starts a thread (WebSocket startThread).

import (
	"context"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// StartThreadHandler starts a thread; one of the Commands.
type StartThreadHandler struct {
	threads   ports.ThreadCreator
	keyed     StartThreadWithKeyHandler // a start that names a trace
	contracts *contractCache
	clock     ports.Clock
	metrics   ports.ThreadMetrics
}

// NewStartThreadHandler builds StartThread.
func NewStartThreadHandler(threads ports.ThreadCreator, keyed StartThreadWithKeyHandler, contracts *contractCache,
	clock ports.Clock, metrics ports.ThreadMetrics) StartThreadHandler {
	return StartThreadHandler{threads: threads, keyed: keyed, contracts: contracts, clock: clock, metrics: metrics}
}

// Handle creates an active thread; the caller becomes its owner party
// under Role. A start that carries refs.otel_trace_id resumes that trace's
// thread when one exists (OTLP and SDKs share it; see StartThreadWithKey).
func (h StartThreadHandler) Handle(ctx context.Context, in StartThreadInput) (domain.Thread, error) {
	if trace := in.Refs["otel_trace_id"]; trace != "" {
		th, _, err := h.keyed.Handle(ctx, KeyTrace, trace, in)
		return th, err
	}
	p, err := authz.Require(ctx, domain.PermThreadsWrite)
	if err != nil {
		return domain.Thread{}, err
	}
	th, err := newThread(ctx, h.contracts, h.clock, p, in)
	if err != nil {
		return domain.Thread{}, err
	}
	if err := h.threads.CreateThread(ctx, th, in.Refs); err != nil {
		return domain.Thread{}, err
	}
	h.contracts.remember(th)
	h.metrics.ThreadStarted(th.ContractName)
	return th, nil
}
