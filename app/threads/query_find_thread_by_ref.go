package threads

// The FindThreadByRef query: the oldest thread with a ref (a trace's thread
// for a party-scoped OTLP caller).

import (
	"context"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// FindThreadByRefHandler finds a thread by one of its refs; one of the Queries.
type FindThreadByRefHandler struct {
	finder  ports.ThreadRefFinder
	threads ports.ThreadGetter
	clock   ports.Clock
}

// NewFindThreadByRefHandler builds FindThreadByRef.
func NewFindThreadByRefHandler(finder ports.ThreadRefFinder, threads ports.ThreadGetter, clock ports.Clock) FindThreadByRefHandler {
	return FindThreadByRefHandler{finder: finder, threads: threads, clock: clock}
}

// Handle returns the id of the oldest thread with ref key=value.
// A party-scoped caller finds only a thread it is a party of (OTLP then
// starts its own thread for the trace).
func (h FindThreadByRefHandler) Handle(ctx context.Context, key, value string) (string, error) {
	p, err := authz.Require(ctx, domain.PermThreadsRead)
	if err != nil {
		return "", err
	}
	id, err := h.finder.FindThreadByRef(ctx, key, value)
	if err != nil {
		return "", err
	}
	return id, checkVisibleID(ctx, h.threads, h.clock, p, id)
}
