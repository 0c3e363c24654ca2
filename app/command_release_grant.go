package app

// The ReleaseGrant command: gives back, unused, a grant whose answer was never
// sent (a WebSocket waitFor ended by cancelWait as it was granted).

import (
	"context"

	"github.com/threadengine/engine/domain"
)

// ReleaseGrantHandler gives back an unanswered grant unused; one of Threads' Commands.
type ReleaseGrantHandler struct{ t *Threads }

// Handle gives back, unused, a grant whose allowed answer (WaitResult.Answer)
// was never sent (the waiter cancelled): what it consumed is enabled again.
// A later wait of the same invocation answered with the grant keeps it.
func (h ReleaseGrantHandler) Handle(ctx context.Context, threadID, invocationID, answer string) error {
	t := h.t
	if _, err := Require(ctx, domain.PermThreadsWrite); err != nil {
		return err
	}
	return t.store.ReleaseGrant(ctx, threadID, invocationID, answer)
}
