package waits

// The CancelGrant command: gives back the grant of an invocation for good
// (WebSocket waitFor with cancel).

import (
	"context"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// CancelGrantHandler gives back an invocation's grant for good; one of the
// thread Commands (threads.Application).
type CancelGrantHandler struct {
	grants  ports.Grants
	changes ThreadChanges
	clock   ports.Clock
}

// NewCancelGrantHandler builds CancelGrant; changes hears of the grant
// cancelled (a repeat wait of the invocation is then denied).
func NewCancelGrantHandler(grants ports.Grants, changes ThreadChanges, clock ports.Clock) CancelGrantHandler {
	return CancelGrantHandler{grants: grants, changes: changes, clock: clock}
}

// Handle gives back the grant of invocationID (waitFor with cancel): it
// is recorded cancelled, so a later report carrying that id is refused
// (invocation_cancelled); the predecessor success it consumed stays consumed.
func (h CancelGrantHandler) Handle(ctx context.Context, threadID, role, stepName, invocationID string) (WaitResult, error) {
	p, err := authz.Require(ctx, domain.PermThreadsWrite)
	if err != nil {
		return WaitResult{}, err
	}
	if err := checkInvocationID(invocationID); err != nil {
		return WaitResult{}, err
	}
	err = h.grants.UpdateGrants(ctx, threadID, func(v ports.GrantTx) (*domain.StepGrant, error) {
		if err := authz.CheckVisible(p, &v.Thread, now(h.clock)); err != nil {
			return nil, err
		}
		g, err := v.Thread.CancelGrant(authz.Actor(p, role), v.Grants, stepName, invocationID, now(h.clock))
		return &g, err
	})
	if err != nil {
		return WaitResult{}, err
	}
	h.changes.ThreadsChanged(threadID)
	return WaitResult{Decision: DecisionCancelled, Message: "grant given back"}, nil
}
