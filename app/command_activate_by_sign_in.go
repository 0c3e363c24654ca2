package app

// The ActivateBySignIn command: records a verified sign-in of a user (the
// OIDC sign-in and the test harness; no route of its own).

import (
	"context"

	"github.com/threadengine/engine/domain"
)

// ActivateBySignInHandler records a verified sign-in of a user; one of Identity's Commands.
type ActivateBySignInHandler struct{ s *Identity }

// Handle records a verified sign-in of userID: an invitation becomes active,
// an active user gets its last-login time. It is not exposed to
// administrators (they cannot activate invitations); the OIDC sign-in and the
// test harness call it after the person has proven their email.
func (h ActivateBySignInHandler) Handle(ctx context.Context, userID string) (domain.User, error) {
	s := h.s
	u, changed, err := activateUser(ctx, s.d.Users, userID, s.now())
	if err != nil {
		return domain.User{}, err
	}
	if changed {
		s.audit(ctx, domain.Principal{Kind: domain.PrincipalUser, ID: u.ID}, "user.activated", u.ID, map[string]any{"email": u.Email})
	}
	return u, nil
}
