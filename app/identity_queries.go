package app

// What the identity queries share: the refusal of a bad credential, the
// counting of refusals, the session check behind AuthenticateSession, and
// the results of the list queries.

import (
	"context"

	"github.com/threadengine/engine/domain"
)

var errBadCredential = domain.NewBase(domain.KindUnauthenticated, domain.CodeUnauthenticated, "the credential is not valid")

// countAuthFailure counts a refused credential; failures to check one (the
// database is down) are not refusals.
func (s *Identity) countAuthFailure(method string, err error) {
	if err == nil {
		return
	}
	if de := domain.AsError(err); de.Kind != domain.KindInternal && de.Kind != domain.KindUnavailable {
		s.d.Metrics.AuthFailed(method, string(de.Code))
	}
}

// authenticateSession checks a session token (AuthenticateSession), from
// the cache or freshly read rows.
func (s *Identity) authenticateSession(ctx context.Context, token string) (domain.Principal, domain.Session, error) {
	if !domain.LooksLikeSessionToken(token) {
		return domain.Principal{}, domain.Session{}, errBadCredential
	}
	hash := domain.HashSecret(token)
	if e := s.cache.session(hash); e != nil {
		return s.sessionPrincipal(e.sess, e.subj)
	}
	gen := s.cache.generation()
	sess, err := s.d.Sessions.GetSessionByTokenHash(ctx, hash)
	if err != nil {
		return domain.Principal{}, domain.Session{}, notFoundAs(err, domain.ErrSessionRevoked)
	}
	var subj domain.SessionSubject
	switch sess.PrincipalKind {
	case domain.PrincipalUser:
		u, err := s.d.Users.GetUser(ctx, sess.PrincipalID)
		if err != nil && domain.KindOf(err) != domain.KindNotFound {
			return domain.Principal{}, sess, err
		}
		if err == nil {
			subj.User = &u
		}
	case domain.PrincipalServiceAccount:
		sa, err := s.d.ServiceAccounts.GetServiceAccount(ctx, sess.PrincipalID)
		if err != nil && domain.KindOf(err) != domain.KindNotFound {
			return domain.Principal{}, sess, err
		}
		if err == nil {
			subj.ServiceAccount = &sa
		}
	}
	if sess.SourceKeyID != "" {
		k, err := s.d.APIKeys.GetAPIKey(ctx, sess.SourceKeyID)
		if err != nil && domain.KindOf(err) != domain.KindNotFound {
			return domain.Principal{}, sess, err
		}
		if err == nil {
			subj.SourceKey = &k
		}
	}
	p, sess, err := s.sessionPrincipal(sess, subj)
	if err == nil {
		s.cache.putSession(hash, gen, sess, subj)
	}
	return p, sess, err
}

// sessionPrincipal applies domain.CheckSession at the current time, for
// freshly read and for cached rows alike.
func (s *Identity) sessionPrincipal(sess domain.Session, subj domain.SessionSubject) (domain.Principal, domain.Session, error) {
	if err := domain.CheckSession(sess, subj, s.now()); err != nil {
		return domain.Principal{}, sess, err
	}
	p := domain.PrincipalOf(subj)
	p.Via = domain.CredentialSession
	p.KeyID = sess.SourceKeyID
	p.Session = sess.ID
	p.Identity = sess.Identity
	return p, sess, nil
}

// UserList is every user, sorted by email, and whether the caller may
// manage them (so a UI shows or hides its controls).
type UserList struct {
	Users     []domain.User
	CanManage bool
}

// CanManageAllKeys reports whether the caller may see and manage every key.
func CanManageAllKeys(ctx context.Context) bool {
	p, ok := PrincipalFrom(ctx)
	return ok && p.Can(domain.PermAllKeys)
}
