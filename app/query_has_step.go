package app

// The HasStep query: whether an attempt is recorded (OTLP skips spans an
// exporter sent again).

import (
	"context"

	"github.com/threadengine/engine/domain"
)

// HasStepHandler reports whether a step attempt is recorded; one of Threads' Queries.
type HasStepHandler struct{ t *Threads }

// Handle reports whether any attempt of (thread, step, key) is recorded.
func (h HasStepHandler) Handle(ctx context.Context, threadID, stepName, key string) (bool, error) {
	t := h.t
	p, err := Require(ctx, domain.PermThreadsRead)
	if err != nil {
		return false, err
	}
	if err := t.checkVisibleID(ctx, p, threadID); err != nil {
		return false, err
	}
	return t.store.HasActivity(ctx, threadID, stepName, key)
}
