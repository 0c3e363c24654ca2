package app

// The StartUserSession command: opens a browser session for an active user
// after a verified registry sign-in (GET /auth/callback, through SignIn).

import (
	"context"

	"github.com/threadengine/engine/domain"
)

// StartUserSessionHandler opens a browser session for an active user; one of Identity's Commands.
type StartUserSessionHandler struct{ s *Identity }

// Handle opens a browser session for an active user, e.g. after a verified
// OIDC sign-in (source oidc, identity = registry subject).
func (h StartUserSessionHandler) Handle(ctx context.Context, userID string, source domain.SessionSource, identity, idTokenHint string) (string, domain.Session, error) {
	s := h.s
	u, err := s.d.Users.GetUser(ctx, userID)
	if err != nil {
		return "", domain.Session{}, err
	}
	if err := domain.CheckPrincipalActive(domain.PrincipalUser, domain.SessionSubject{User: &u}); err != nil {
		return "", domain.Session{}, err
	}
	return s.createSession(ctx, domain.PrincipalUser, u.ID, source, "", identity, idTokenHint)
}
