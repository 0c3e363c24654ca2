package identity

// The ActivateBySignIn command: records a verified sign-in of a user (the
// OIDC sign-in and the test harness; no route of its own).

import (
	"context"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// ActivateBySignInHandler records a verified sign-in of a user; one of the Commands.
type ActivateBySignInHandler struct {
	users ports.Users
	audit auditTrail
	clock ports.Clock
}

// NewActivateBySignInHandler builds ActivateBySignIn.
func NewActivateBySignInHandler(users ports.Users, audit auditTrail, clock ports.Clock) ActivateBySignInHandler {
	return ActivateBySignInHandler{users: users, audit: audit, clock: clock}
}

// Handle records a verified sign-in of userID: an invitation becomes active,
// an active user gets its last-login time. It is not exposed to
// administrators (they cannot activate invitations); the OIDC sign-in and the
// test harness call it after the person has proven their email.
func (h ActivateBySignInHandler) Handle(ctx context.Context, userID string) (domain.User, error) {
	u, changed, err := ActivateUser(ctx, h.users, userID, now(h.clock))
	if err != nil {
		return domain.User{}, err
	}
	if changed {
		h.audit.record(ctx, domain.Principal{Kind: domain.PrincipalUser, ID: u.ID}, "user.activated", u.ID, map[string]any{"email": u.Email})
	}
	return u, nil
}
