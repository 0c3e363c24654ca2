package threads

// The InviteParty command: issues an invitation to a thread (WebSocket
// inviteParty).

import (
	"context"
	"time"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// InviteInput invites a party to a thread.
type InviteInput struct {
	// ThreadID is the thread; "" means the connection's only thread
	// (ambiguous_thread when it holds several).
	ThreadID    string
	Conn        *ConnParties
	Role        string // the invitee's role
	AccessLevel string // external (default) | observer | participant
	ExpiresIn   string // "<int>m|h|d", default 24h
}

// Invitation is a signed thread token.
type Invitation struct {
	Token       string
	ThreadID    string
	Role        string
	AccessLevel domain.AccessLevel
	ExpiresAt   time.Time
}

// InvitePartyHandler issues a thread invitation; one of the Commands.
type InvitePartyHandler struct {
	threads   ports.ThreadGetter
	contracts *contractCache
	keys      invitationKeys
	clock     ports.Clock
	maxTTL    time.Duration // 0: DefaultInvitationMaxTTL
}

// NewInvitePartyHandler builds InviteParty: keys sign the invitations.
// maxTTL bounds expiresIn (0: DefaultInvitationMaxTTL).
func NewInvitePartyHandler(threads ports.ThreadGetter, contracts *contractCache, keys invitationKeys, clock ports.Clock,
	maxTTL time.Duration) InvitePartyHandler {
	return InvitePartyHandler{threads: threads, contracts: contracts, keys: keys, clock: clock, maxTTL: maxTTL}
}

// Handle issues a thread token (an HS256 JWT keyed by a key derived from the
// installation secret). Who may invite whom is domain.Thread.Invite's rule.
func (h InvitePartyHandler) Handle(ctx context.Context, in InviteInput) (Invitation, error) {
	p, err := authz.Require(ctx, domain.PermThreadsWrite)
	if err != nil {
		return Invitation{}, err
	}
	threadID, err := domain.InviteTarget(in.ThreadID, in.Conn.OpenThreads())
	if err != nil {
		return Invitation{}, err
	}
	level, err := domain.ParseInviteLevel(in.AccessLevel)
	if err != nil {
		return Invitation{}, err
	}
	ttl, err := ParseExpiresIn(in.ExpiresIn, h.maxTTL)
	if err != nil {
		return Invitation{}, err
	}
	c, err := h.contracts.ThreadContract(ctx, threadID)
	if err != nil {
		return Invitation{}, err
	}
	th, err := h.threads.GetThread(ctx, threadID)
	if err != nil {
		return Invitation{}, err
	}
	now := now(h.clock)
	if _, err := th.Invite(authz.Actor(p, in.Conn.Role(threadID)), in.Role, level, c, now); err != nil {
		return Invitation{}, err
	}
	perms := []string{"read", "write"}
	if level == domain.AccessObserver {
		perms = []string{"read"}
	}
	expires := time.Unix(now.Add(ttl).Unix(), 0).UTC() // the token holds whole seconds
	tok, err := h.keys.signToken(inviteClaims{ThreadID: th.ID, ContractID: th.ContractName, Role: in.Role, AccessLevel: level,
		Permissions: perms, InvitedBy: p.ID}, now, expires)
	if err != nil {
		return Invitation{}, err
	}
	return Invitation{Token: tok, ThreadID: th.ID, Role: in.Role, AccessLevel: level, ExpiresAt: expires}, nil
}
