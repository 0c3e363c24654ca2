package app

// The StartThread command: starts a thread (WebSocket startThread).

import (
	"context"

	"github.com/threadengine/engine/domain"
)

// StartThreadHandler starts a thread; one of Threads' Commands.
type StartThreadHandler struct{ t *Threads }

// Handle creates an active thread; the caller becomes its owner party
// under Role. A start that carries refs.otel_trace_id resumes that trace's
// thread when one exists (OTLP and SDKs share it; see StartThreadWithKey).
func (h StartThreadHandler) Handle(ctx context.Context, in StartThreadInput) (domain.Thread, error) {
	t := h.t
	if trace := in.Refs["otel_trace_id"]; trace != "" {
		th, _, err := StartThreadWithKeyHandler{t}.Handle(ctx, KeyTrace, trace, in)
		return th, err
	}
	p, err := Require(ctx, domain.PermThreadsWrite)
	if err != nil {
		return domain.Thread{}, err
	}
	th, err := t.newThread(ctx, p, in)
	if err != nil {
		return domain.Thread{}, err
	}
	if err := t.store.CreateThread(ctx, th, in.Refs); err != nil {
		return domain.Thread{}, err
	}
	t.rememberThread(th.ID, contractRef{th.ContractName, th.ContractVersion})
	t.metrics.ThreadStarted(th.ContractName)
	return th, nil
}
