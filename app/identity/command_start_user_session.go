package identity

// The StartUserSession command: opens a browser session for an active user
// after a verified registry sign-in (GET /auth/callback, through SignIn).

import (
	"context"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// StartUserSessionHandler opens a browser session for an active user; one of the Commands.
type StartUserSessionHandler struct {
	users    ports.Users
	sessions *sessionMinter
}

// NewStartUserSessionHandler builds StartUserSession.
func NewStartUserSessionHandler(users ports.Users, sessions *sessionMinter) StartUserSessionHandler {
	return StartUserSessionHandler{users: users, sessions: sessions}
}

// Handle opens a browser session for an active user, e.g. after a verified
// OIDC sign-in (source oidc, identity = registry subject).
func (h StartUserSessionHandler) Handle(ctx context.Context, userID string, source domain.SessionSource, identity, idTokenHint string) (string, domain.Session, error) {
	u, err := h.users.GetUser(ctx, userID)
	if err != nil {
		return "", domain.Session{}, err
	}
	if err := domain.CheckPrincipalActive(domain.PrincipalUser, domain.SessionSubject{User: &u}); err != nil {
		return "", domain.Session{}, err
	}
	return h.sessions.createSession(ctx, domain.PrincipalUser, u.ID, source, "", identity, idTokenHint)
}
