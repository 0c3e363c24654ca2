package threads

// The AddRefs command: merges refs into a thread's refs (WebSocket addRefs,
// linkThread).

import (
	"context"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// AddRefsInput merges refs into a thread's refs.
type AddRefsInput struct {
	ThreadID string
	Role     string // the party the caller's connection acts as ("" if none declared)
	Refs     map[string]string
}

// AddRefsHandler merges refs into a thread's refs; one of the Commands.
type AddRefsHandler struct {
	threads ports.ThreadUpdater
	clock   ports.Clock
}

// NewAddRefsHandler builds AddRefs.
func NewAddRefsHandler(threads ports.ThreadUpdater, clock ports.Clock) AddRefsHandler {
	return AddRefsHandler{threads: threads, clock: clock}
}

// Handle merges refs (key by key) into a thread's refs; the caller must be a
// party that may write, and the thread must not have ended
// (domain.Thread.AddRefs).
func (h AddRefsHandler) Handle(ctx context.Context, in AddRefsInput) error {
	p, err := authz.Require(ctx, domain.PermThreadsWrite)
	if err != nil {
		return err
	}
	if len(in.Refs) == 0 {
		return domain.Invalid("refs", "refs must be a non-empty object")
	}
	if err := checkRefs(in.Refs); err != nil {
		return err
	}
	now := now(h.clock)
	_, err = h.threads.UpdateThread(ctx, in.ThreadID, func(th *domain.Thread) (ports.ThreadEffects, error) {
		if err := th.AddRefs(authz.Actor(p, in.Role), now); err != nil {
			return ports.ThreadEffects{}, err
		}
		th.UpdatedAt = now
		return ports.ThreadEffects{Refs: in.Refs}, nil
	})
	return err
}
