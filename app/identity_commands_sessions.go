package app

// What the identity commands on browser sessions share (the exchanges, the
// registry sign-in's StartUserSession): the license refusal and the minting
// of a session.

import (
	"context"

	"github.com/threadengine/engine/domain"
)

var errLicenseDenied = domain.NewBase(domain.KindUnauthenticated, domain.CodeUnauthenticated, "the license key is not valid")

// createSession stores a new session for a principal (the exchanges and
// StartUserSession share it) and returns its token.
func (s *Identity) createSession(ctx context.Context, kind domain.PrincipalKind, id string, source domain.SessionSource, keyID, identity, hint string) (string, domain.Session, error) {
	token, hash, err := domain.NewSessionToken(s.d.Random)
	if err != nil {
		return "", domain.Session{}, err
	}
	now := s.now()
	sess := domain.Session{
		ID: s.d.NewID(), TokenHash: hash, PrincipalKind: kind, PrincipalID: id, Source: source,
		SourceKeyID: keyID, Identity: identity, IDTokenHint: hint, CreatedAt: now, ExpiresAt: now.Add(s.d.SessionTTL),
	}
	if err := s.d.Sessions.CreateSession(ctx, sess); err != nil {
		return "", domain.Session{}, err
	}
	return token, sess, nil
}
