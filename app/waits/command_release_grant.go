package waits

// The ReleaseGrant command: gives back, unused, a grant whose answer was never
// sent (a WebSocket waitFor ended by cancelWait as it was granted).

import (
	"context"
	"time"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// ReleaseGrantHandler gives back an unanswered grant unused; one of the
// thread Commands (threads.Application).
type ReleaseGrantHandler struct {
	grants  ports.Grants
	changes ThreadChanges
}

// NewReleaseGrantHandler builds ReleaseGrant; changes hears of the grant
// given back (what it consumed may enable another waiter).
func NewReleaseGrantHandler(grants ports.Grants, changes ThreadChanges) ReleaseGrantHandler {
	return ReleaseGrantHandler{grants: grants, changes: changes}
}

// Handle gives back, unused, a grant whose allowed answer (WaitResult.Answer)
// was never sent (the waiter cancelled): what it consumed is enabled again.
// A later wait of the same invocation answered with the grant keeps it. It
// runs to its end when ctx is cancelled (a cancelled waiter is why it runs),
// for at most giveBackLimit.
func (h ReleaseGrantHandler) Handle(ctx context.Context, threadID, invocationID, answer string) error {
	if _, err := authz.Require(ctx, domain.PermThreadsWrite); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), giveBackLimit)
	defer cancel()
	if err := h.grants.ReleaseGrant(rctx, threadID, invocationID, answer); err != nil {
		return err
	}
	h.changes.ThreadsChanged(threadID)
	return nil
}

// giveBackLimit bounds a give-back queued on the thread's row lock.
const giveBackLimit = 30 * time.Second
