package app

// The CancelGrant command: gives back the grant of an invocation for good
// (WebSocket waitFor with cancel).

import (
	"context"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// CancelGrantHandler gives back an invocation's grant for good; one of Threads' Commands.
type CancelGrantHandler struct{ t *Threads }

// Handle gives back the grant of invocationID (waitFor with cancel): it
// is recorded cancelled, so a later report carrying that id is refused
// (invocation_cancelled); the predecessor success it consumed stays consumed.
func (h CancelGrantHandler) Handle(ctx context.Context, threadID, role, stepName, invocationID string) (WaitResult, error) {
	t := h.t
	p, err := Require(ctx, domain.PermThreadsWrite)
	if err != nil {
		return WaitResult{}, err
	}
	if err := checkInvocationID(invocationID); err != nil {
		return WaitResult{}, err
	}
	err = t.store.UpdateGrants(ctx, threadID, func(v ports.GrantTx) (*domain.StepGrant, error) {
		if err := checkVisible(p, &v.Thread, t.now()); err != nil {
			return nil, err
		}
		g, err := v.Thread.CancelGrant(actor(p, role), v.Grants, stepName, invocationID, t.now())
		return &g, err
	})
	if err != nil {
		return WaitResult{}, err
	}
	return WaitResult{Decision: DecisionCancelled, Message: "grant given back"}, nil
}
