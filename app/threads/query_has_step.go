package threads

// The HasStep query: whether an attempt is recorded (OTLP skips spans an
// exporter sent again).

import (
	"context"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// HasStepHandler reports whether a step attempt is recorded; one of the Queries.
type HasStepHandler struct {
	threads ports.ThreadGetter
	steps   ports.StepLog
	clock   ports.Clock
}

// NewHasStepHandler builds HasStep.
func NewHasStepHandler(threads ports.ThreadGetter, steps ports.StepLog, clock ports.Clock) HasStepHandler {
	return HasStepHandler{threads: threads, steps: steps, clock: clock}
}

// Handle reports whether any attempt of (thread, step, key) is recorded.
func (h HasStepHandler) Handle(ctx context.Context, threadID, stepName, key string) (bool, error) {
	p, err := authz.Require(ctx, domain.PermThreadsRead)
	if err != nil {
		return false, err
	}
	if err := checkVisibleID(ctx, h.threads, h.clock, p, threadID); err != nil {
		return false, err
	}
	return h.steps.HasActivity(ctx, threadID, stepName, key)
}
