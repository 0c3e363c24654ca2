package app

// The AuthenticateSession query: who is calling with a browser session
// cookie (every cookie-authenticated request).

import (
	"context"

	"github.com/threadengine/engine/domain"
)

// AuthenticateSessionHandler checks a browser session token; one of
// Identity's Queries (and half of IdentityQueries.Authenticator).
type AuthenticateSessionHandler struct{ s *Identity }

// Handle checks a browser session token with domain.CheckSession against
// freshly read (or briefly cached) user, service account and source key rows,
// so role changes, suspensions and key revocations apply on the next request.
func (h AuthenticateSessionHandler) Handle(ctx context.Context, token string) (domain.Principal, error) {
	p, _, err := h.s.authenticateSession(ctx, token)
	h.s.countAuthFailure("session", err)
	return p, err
}
