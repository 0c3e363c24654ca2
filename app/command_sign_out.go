package app

// The SignOut command: revokes a browser session (POST /auth/logout).

import (
	"context"

	"github.com/threadengine/engine/domain"
)

// SignOutHandler revokes a browser session (POST /auth/logout); one of Identity's Commands.
type SignOutHandler struct{ s *Identity }

// Handle revokes the session a token names and returns it (the caller may
// need its IDTokenHint for provider logout). Unknown tokens are not an error
// for the caller's purposes but are reported as unauthenticated.
func (h SignOutHandler) Handle(ctx context.Context, token string) (domain.Session, error) {
	s := h.s
	if !domain.LooksLikeSessionToken(token) {
		return domain.Session{}, errBadCredential
	}
	sess, err := s.d.Sessions.GetSessionByTokenHash(ctx, domain.HashSecret(token))
	if err != nil {
		return domain.Session{}, notFoundAs(err, domain.ErrSessionRevoked)
	}
	if sess.RevokedAt == nil {
		now := s.now()
		if err := s.d.Sessions.RevokeSession(ctx, sess.ID, now); err != nil {
			return domain.Session{}, err
		}
		sess.RevokedAt = &now
	}
	return sess, nil
}
