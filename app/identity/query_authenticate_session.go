package identity

// The AuthenticateSession query: who is calling with a browser session
// cookie (every cookie-authenticated request).

import (
	"context"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// AuthenticateSessionHandler checks a browser session token; one of the
// Queries (and half of Queries.Authenticator).
type AuthenticateSessionHandler struct {
	sessions ports.Sessions
	users    ports.Users
	accounts ports.ServiceAccounts
	keys     ports.APIKeys
	cache    *authCache // nil: disabled
	refused  refusals
	clock    ports.Clock
}

// NewAuthenticateSessionHandler builds AuthenticateSession.
func NewAuthenticateSessionHandler(sessions ports.Sessions, users ports.Users, accounts ports.ServiceAccounts, keys ports.APIKeys,
	cache *authCache, refused refusals, clock ports.Clock) AuthenticateSessionHandler {
	return AuthenticateSessionHandler{sessions: sessions, users: users, accounts: accounts, keys: keys, cache: cache, refused: refused, clock: clock}
}

// Handle checks a browser session token with domain.CheckSession against
// freshly read (or briefly cached) user, service account and source key rows,
// so role changes, suspensions and key revocations apply on the next request.
func (h AuthenticateSessionHandler) Handle(ctx context.Context, token string) (domain.Principal, error) {
	p, _, err := h.authenticateSession(ctx, token)
	h.refused.count("session", err)
	return p, err
}

// authenticateSession checks a session token, from the cache or freshly
// read rows.
func (h AuthenticateSessionHandler) authenticateSession(ctx context.Context, token string) (domain.Principal, domain.Session, error) {
	if !domain.LooksLikeSessionToken(token) {
		return domain.Principal{}, domain.Session{}, errBadCredential
	}
	hash := domain.HashSecret(token)
	if e := h.cache.session(hash); e != nil {
		return h.sessionPrincipal(e.sess, e.subj)
	}
	gen := h.cache.generation()
	sess, err := h.sessions.GetSessionByTokenHash(ctx, hash)
	if err != nil {
		return domain.Principal{}, domain.Session{}, notFoundAs(err, domain.ErrSessionRevoked)
	}
	var subj domain.SessionSubject
	switch sess.PrincipalKind {
	case domain.PrincipalUser:
		u, err := h.users.GetUser(ctx, sess.PrincipalID)
		if err != nil && domain.KindOf(err) != domain.KindNotFound {
			return domain.Principal{}, sess, err
		}
		if err == nil {
			subj.User = &u
		}
	case domain.PrincipalServiceAccount:
		sa, err := h.accounts.GetServiceAccount(ctx, sess.PrincipalID)
		if err != nil && domain.KindOf(err) != domain.KindNotFound {
			return domain.Principal{}, sess, err
		}
		if err == nil {
			subj.ServiceAccount = &sa
		}
	}
	if sess.SourceKeyID != "" {
		k, err := h.keys.GetAPIKey(ctx, sess.SourceKeyID)
		if err != nil && domain.KindOf(err) != domain.KindNotFound {
			return domain.Principal{}, sess, err
		}
		if err == nil {
			subj.SourceKey = &k
		}
	}
	p, sess, err := h.sessionPrincipal(sess, subj)
	if err == nil {
		h.cache.putSession(hash, gen, sess, subj)
	}
	return p, sess, err
}

// sessionPrincipal applies domain.CheckSession at the current time, for
// freshly read and for cached rows alike.
func (h AuthenticateSessionHandler) sessionPrincipal(sess domain.Session, subj domain.SessionSubject) (domain.Principal, domain.Session, error) {
	if err := domain.CheckSession(sess, subj, now(h.clock)); err != nil {
		return domain.Principal{}, sess, err
	}
	p := domain.PrincipalOf(subj)
	p.Via = domain.CredentialSession
	p.KeyID = sess.SourceKeyID
	p.Session = sess.ID
	p.Identity = sess.Identity
	return p, sess, nil
}
