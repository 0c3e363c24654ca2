package waits

// The WaitForPermission command: waits until a step may run and stores its
// grant (WebSocket waitFor with a stepName and an invocationId).

import (
	"context"
	"time"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// WaitForPermissionHandler waits until a step may run and grants it; one of
// the thread Commands (threads.Application).
type WaitForPermissionHandler struct {
	grants    ports.Grants
	contracts ThreadContracts
	feed      ThreadFeed
	release   ReleaseGrantHandler // gives back a grant its waiter never heard of
	clock     ports.Clock
}

// NewWaitForPermissionHandler builds WaitForPermission.
func NewWaitForPermissionHandler(grants ports.Grants, contracts ThreadContracts, feed ThreadFeed, release ReleaseGrantHandler,
	clock ports.Clock) WaitForPermissionHandler {
	return WaitForPermissionHandler{grants: grants, contracts: contracts, feed: feed, release: release, clock: clock}
}

// Handle blocks until the thread's rules let the caller, acting
// as role, run stepName now under invocationID (domain.Thread.PermitStep),
// stores the grant and answers allowed; a caller who may not write, a step
// outside the contract, another party's step, a closed thread or a given-back
// invocation is denied at once. A free-form thread allows every step.
//
// Each check runs under the thread's row lock (ports.Grants.UpdateGrants),
// so a predecessor success enables one grant only, whichever replica the
// waiters are on. A wait cancelled as it was granted gives the grant back
// unused (ReleaseGrant): it never grants or consumes after cancelWait.
func (h WaitForPermissionHandler) Handle(ctx context.Context, threadID, role, stepName, invocationID string, timeout time.Duration) (WaitResult, error) {
	p, err := authz.Require(ctx, domain.PermThreadsWrite)
	if err != nil {
		return WaitResult{}, err
	}
	if stepName == "" {
		return WaitResult{}, domain.Invalid("stepName", "Missing required field: stepName")
	}
	if invocationID == "" {
		return WaitResult{}, domain.Invalid("invocationId", "Missing required field: invocationId")
	}
	if err := checkInvocationID(invocationID); err != nil {
		return WaitResult{}, err
	}
	// The contract is the thread's for good: resolved once, outside the lock.
	c, err := h.contracts.ThreadContract(ctx, threadID)
	if err != nil {
		return WaitResult{}, err
	}
	r, err := wait(ctx, h.feed, threadID, timeout, func(rctx context.Context, commit func() bool) (WaitResult, bool, error) {
		return h.permission(rctx, commit, p, c, threadID, role, stepName, invocationID)
	})
	if err == nil && r.MadeGrant() && ctx.Err() != nil {
		// Granted as the wait was cancelled: the answer reaches no one.
		return WaitResult{Decision: DecisionCancelled, Message: "wait cancelled"}, h.release.Handle(ctx, threadID, invocationID, r.Answer)
	}
	return r, err
}
