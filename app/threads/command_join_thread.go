package threads

// The JoinThread command: gives the caller a party on a thread (WebSocket
// joinThread).

import (
	"context"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// JoinInput joins a thread by token, or directly by id (+ optional role).
type JoinInput struct {
	Token    string
	ThreadID string
	Role     string
}

// JoinResult is the party the caller joined as.
type JoinResult struct {
	Thread      domain.Thread
	Role        string
	AccessLevel domain.AccessLevel
}

// JoinThreadHandler gives the caller a party on a thread; one of the Commands.
type JoinThreadHandler struct {
	threads   ports.ThreadUpdater
	contracts *contractCache
	keys      invitationKeys
	clock     ports.Clock
}

// NewJoinThreadHandler builds JoinThread: keys verify the invitations.
func NewJoinThreadHandler(threads ports.ThreadUpdater, contracts *contractCache, keys invitationKeys, clock ports.Clock) JoinThreadHandler {
	return JoinThreadHandler{threads: threads, contracts: contracts, keys: keys, clock: clock}
}

// Handle gives the caller a party on a thread (domain.Thread.Join: an
// invitation's role and level, never more; by id only a party it already
// holds, or a new role for the owning principal). The grant is stored under
// the thread's lock.
func (h JoinThreadHandler) Handle(ctx context.Context, in JoinInput) (JoinResult, error) {
	p, err := authz.Require(ctx, domain.PermThreadsRead)
	if err != nil {
		return JoinResult{}, err
	}
	var inv *domain.Invitation
	threadID := in.ThreadID
	if in.Token != "" {
		cl, exp, err := h.keys.verifyToken(in.Token)
		if err != nil {
			return JoinResult{}, err
		}
		inv = &domain.Invitation{ThreadID: cl.ThreadID, Role: cl.Role, Level: cl.AccessLevel,
			InvitedBy: cl.InvitedBy, ExpiresAt: exp}
		threadID = cl.ThreadID
	} else if threadID == "" {
		return JoinResult{}, domain.Invalid("threadId", "Missing required field: threadToken or threadId")
	}
	c, err := h.contracts.ThreadContract(ctx, threadID)
	if err != nil {
		return JoinResult{}, err
	}
	var party domain.Party
	th, err := h.threads.UpdateThread(ctx, threadID, func(th *domain.Thread) (ports.ThreadEffects, error) {
		now := now(h.clock)
		if err := checkJoinByID(p, th, in.Token, now); err != nil {
			return ports.ThreadEffects{}, err
		}
		party, _, err = th.Join(authz.Actor(p, in.Role), inv, c, now)
		return ports.ThreadEffects{}, err
	})
	if err != nil {
		return JoinResult{}, err
	}
	return JoinResult{Thread: th, Role: party.Role, AccessLevel: party.Level}, nil
}
