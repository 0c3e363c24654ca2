package readmodel

// The hash chain's verdict, read through the caller's scope; the
// verification itself is app/integrity's.

import (
	"context"

	"github.com/threadengine/engine/app/integrity"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// StepIntegrity is the verification of one step identity's latest attempt.
type StepIntegrity struct {
	Verified       bool
	Hash, PrevHash string
	Error          string
}

// StepVerifyReader is what verifying one step reads: its newest attempt and
// that attempt's sub-steps.
type StepVerifyReader interface {
	HistoryReader
	integrity.SubStepReader
}

// VerifyStepHandler recomputes the hash of the newest attempt of (thread,
// step, key) from its stored content, as the reference's
// verifyStepIntegrity does.
type VerifyStepHandler struct {
	store   StepVerifyReader
	checker integrity.Checker
	scope   Scope
}

// NewVerifyStepHandler builds the VerifyStep query.
func NewVerifyStepHandler(store StepVerifyReader, checker integrity.Checker, scope Scope) VerifyStepHandler {
	return VerifyStepHandler{store: store, checker: checker, scope: scope}
}

// Handle verifies the step's newest attempt.
func (h VerifyStepHandler) Handle(ctx context.Context, threadID, stepName, key string) (StepIntegrity, error) {
	v, err := h.scope.open(ctx)
	if err != nil {
		return StepIntegrity{}, err
	}
	for f, val := range map[string]string{"threadId": threadID, "stepName": stepName, "idempotencyKey": key} {
		if val == "" {
			return StepIntegrity{}, domain.Invalid(f, "%s is required", f)
		}
	}
	acts, err := v.history(ctx, h.store, ports.StepKey{ThreadID: threadID, StepName: stepName, IdempotencyKey: key},
		ports.HistoryFilter{Limit: 1})
	if err != nil {
		return StepIntegrity{}, err
	}
	if len(acts) == 0 {
		return StepIntegrity{Error: "Step not found in activity log"}, nil
	}
	a := acts[0]
	out := StepIntegrity{Hash: a.Hash, PrevHash: a.PrevHash}
	reason, err := h.checker.Step(ctx, scopedSubSteps{v: v, st: h.store}, a)
	if err != nil {
		return StepIntegrity{}, err
	}
	if reason != "" {
		out.Error = reason
		return out, nil
	}
	out.Verified = true
	return out, nil
}

// scopedSubSteps reads sub-steps through the caller's view.
type scopedSubSteps struct {
	v  view
	st integrity.SubStepReader
}

func (s scopedSubSteps) SubSteps(ctx context.Context, steps []ports.StepKey) (map[ports.StepKey][]ports.SubStepView, error) {
	return perStep(ctx, s.v, steps, func(keys []ports.StepKey) (map[ports.StepKey][]ports.SubStepView, error) {
		return s.st.SubSteps(ctx, keys)
	})
}

// VerifyThreadsHandler verifies each thread (app/integrity): its hash chain
// (content recomputed from the stored rows, never copied from a stored hash
// column), its head against its thread row, and its steps against the
// transparency log.
type VerifyThreadsHandler struct {
	store   integrity.Reader
	checker integrity.Checker
	scope   Scope
}

// NewVerifyThreadsHandler builds the VerifyThreads loader.
func NewVerifyThreadsHandler(store integrity.Reader, checker integrity.Checker, scope Scope) VerifyThreadsHandler {
	return VerifyThreadsHandler{store: store, checker: checker, scope: scope}
}

// Handle verifies the visible threads of threadIDs.
func (h VerifyThreadsHandler) Handle(ctx context.Context, threadIDs []string) (map[string]domain.ChainStatus, error) {
	v, err := h.scope.open(ctx)
	if err != nil {
		return nil, err
	}
	if v.party == nil {
		return h.checker.Threads(ctx, h.store, threadIDs, true)
	}
	return h.checker.Threads(ctx, scopedIntegrity{v: v, st: h.store}, threadIDs, false)
}

// VerifyThreadHandler verifies one thread.
type VerifyThreadHandler struct{ threads VerifyThreadsHandler }

// NewVerifyThreadHandler builds the VerifyThread query over VerifyThreads.
func NewVerifyThreadHandler(threads VerifyThreadsHandler) VerifyThreadHandler {
	return VerifyThreadHandler{threads: threads}
}

// Handle verifies thread threadID; an unknown thread is not found, unless
// the transparency log shows it was deleted outside the documented paths.
func (h VerifyThreadHandler) Handle(ctx context.Context, threadID string) (domain.ChainStatus, error) {
	m, err := h.threads.Handle(ctx, []string{threadID})
	if err != nil {
		return domain.ChainStatus{}, err
	}
	st, ok := m[threadID]
	if !ok {
		return domain.ChainStatus{}, domain.NotFound("thread " + threadID)
	}
	return st, nil
}
