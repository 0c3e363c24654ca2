package identity

// What the identity commands on browser sessions share (the exchanges, the
// registry sign-in's StartUserSession): the license refusal and the minting
// of a session.

import (
	"context"
	"io"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

var errLicenseDenied = domain.NewBase(domain.KindUnauthenticated, domain.CodeUnauthenticated, "the license key is not valid")

// sessionMinter opens browser sessions.
type sessionMinter struct {
	sessions ports.Sessions
	clock    ports.Clock
	random   io.Reader
	newID    func() string
	ttl      time.Duration
}

// createSession stores a new session for a principal (the exchanges and
// StartUserSession share it) and returns its token.
func (m sessionMinter) createSession(ctx context.Context, kind domain.PrincipalKind, id string, source domain.SessionSource, keyID, identity, hint string) (string, domain.Session, error) {
	token, hash, err := domain.NewSessionToken(m.random)
	if err != nil {
		return "", domain.Session{}, err
	}
	now := now(m.clock)
	sess := domain.Session{
		ID: m.newID(), TokenHash: hash, PrincipalKind: kind, PrincipalID: id, Source: source,
		SourceKeyID: keyID, Identity: identity, IDTokenHint: hint, CreatedAt: now, ExpiresAt: now.Add(m.ttl),
	}
	if err := m.sessions.CreateSession(ctx, sess); err != nil {
		return "", domain.Session{}, err
	}
	return token, sess, nil
}
