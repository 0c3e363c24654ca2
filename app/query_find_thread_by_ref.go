package app

// The FindThreadByRef query: the oldest thread with a ref (a trace's thread
// for a party-scoped OTLP caller).

import (
	"context"

	"github.com/threadengine/engine/domain"
)

// FindThreadByRefHandler finds a thread by one of its refs; one of Threads' Queries.
type FindThreadByRefHandler struct{ t *Threads }

// Handle returns the id of the oldest thread with ref key=value.
// A party-scoped caller finds only a thread it is a party of (OTLP then
// starts its own thread for the trace).
func (h FindThreadByRefHandler) Handle(ctx context.Context, key, value string) (string, error) {
	t := h.t
	p, err := Require(ctx, domain.PermThreadsRead)
	if err != nil {
		return "", err
	}
	id, err := t.store.FindThreadByRef(ctx, key, value)
	if err != nil {
		return "", err
	}
	return id, t.checkVisibleID(ctx, p, id)
}
