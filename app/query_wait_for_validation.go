package app

// The WaitForValidation query: waits for the validation verdict of a recorded
// step (WebSocket waitFor with a stepId).

import (
	"context"
	"time"

	"github.com/threadengine/engine/domain"
)

// WaitForValidationHandler waits for a recorded step's validation verdict; one of Threads' Queries.
type WaitForValidationHandler struct{ t *Threads }

// Handle answers with the validation verdict of one recorded
// step attempt, waiting (on any replica) until it is recorded: passed (with
// warnings as violations), violated, or unvalidated on a free-form thread.
func (h WaitForValidationHandler) Handle(ctx context.Context, threadID, stepID string, timeout time.Duration) (WaitResult, error) {
	t := h.t
	p, err := Require(ctx, domain.PermThreadsRead)
	if err != nil {
		return WaitResult{}, err
	}
	if stepID == "" {
		return WaitResult{}, domain.Invalid("stepId", "Missing required field: stepId")
	}
	th, err := t.store.GetThread(ctx, threadID)
	if err != nil {
		return WaitResult{}, err
	}
	if err := checkVisible(p, &th, t.now()); err != nil {
		return WaitResult{}, err
	}
	return t.wait(ctx, timeout, func(rctx context.Context, _ func() bool) (WaitResult, bool, error) {
		v, found, err := t.store.StepValidation(rctx, threadID, stepID)
		if err != nil || !found {
			return WaitResult{}, false, err
		}
		return verdict(v), true, nil
	})
}
