package identity

// The SignOut command: revokes a browser session (POST /auth/logout).

import (
	"context"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// SignOutHandler revokes a browser session (POST /auth/logout); one of the Commands.
type SignOutHandler struct {
	sessions ports.Sessions
	clock    ports.Clock
}

// NewSignOutHandler builds SignOut.
func NewSignOutHandler(sessions ports.Sessions, clock ports.Clock) SignOutHandler {
	return SignOutHandler{sessions: sessions, clock: clock}
}

// Handle revokes the session a token names and returns it (the caller may
// need its IDTokenHint for provider logout). Unknown tokens are not an error
// for the caller's purposes but are reported as unauthenticated.
func (h SignOutHandler) Handle(ctx context.Context, token string) (domain.Session, error) {
	if !domain.LooksLikeSessionToken(token) {
		return domain.Session{}, errBadCredential
	}
	sess, err := h.sessions.GetSessionByTokenHash(ctx, domain.HashSecret(token))
	if err != nil {
		return domain.Session{}, notFoundAs(err, domain.ErrSessionRevoked)
	}
	if sess.RevokedAt == nil {
		now := now(h.clock)
		if err := h.sessions.RevokeSession(ctx, sess.ID, now); err != nil {
			return domain.Session{}, err
		}
		sess.RevokedAt = &now
	}
	return sess, nil
}
