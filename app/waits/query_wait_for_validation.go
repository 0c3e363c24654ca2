package waits

// The WaitForValidation query: waits for the validation verdict of a recorded
// step (WebSocket waitFor with a stepId).

import (
	"context"
	"time"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// WaitForValidationHandler waits for a recorded step's validation verdict;
// one of the thread Queries (threads.Application).
type WaitForValidationHandler struct {
	threads     ports.ThreadGetter
	validations ports.StepValidations
	feed        ThreadFeed
	clock       ports.Clock
}

// NewWaitForValidationHandler builds WaitForValidation.
func NewWaitForValidationHandler(threads ports.ThreadGetter, validations ports.StepValidations, feed ThreadFeed,
	clock ports.Clock) WaitForValidationHandler {
	return WaitForValidationHandler{threads: threads, validations: validations, feed: feed, clock: clock}
}

// Handle answers with the validation verdict of one recorded
// step attempt, waiting (on any replica) until it is recorded: passed (with
// warnings as violations), violated, or unvalidated on a free-form thread.
func (h WaitForValidationHandler) Handle(ctx context.Context, threadID, stepID string, timeout time.Duration) (WaitResult, error) {
	p, err := authz.Require(ctx, domain.PermThreadsRead)
	if err != nil {
		return WaitResult{}, err
	}
	if stepID == "" {
		return WaitResult{}, domain.Invalid("stepId", "Missing required field: stepId")
	}
	th, err := h.threads.GetThread(ctx, threadID)
	if err != nil {
		return WaitResult{}, err
	}
	if err := authz.CheckVisible(p, &th, now(h.clock)); err != nil {
		return WaitResult{}, err
	}
	return wait(ctx, h.feed, threadID, timeout, func(rctx context.Context, _ func() bool) (WaitResult, bool, error) {
		v, found, err := h.validations.StepValidation(rctx, threadID, stepID)
		if err != nil || !found {
			return WaitResult{}, false, err
		}
		return verdict(v), true, nil
	})
}
