package domain

import (
	"encoding/base64"
	"io"
	"strings"
	"time"
)

const (
	// SessionTokenPrefix starts every browser session token.
	SessionTokenPrefix = "tes_"
	// DefaultSessionTTL is the browser session lifetime.
	DefaultSessionTTL = 8 * time.Hour
)

// SessionSource records how a session was created.
type SessionSource string

const (
	SessionFromAPIKey  SessionSource = "api_key"
	SessionFromLicense SessionSource = "license"
	SessionFromOIDC    SessionSource = "oidc"
)

// Session is a browser session carried in an HttpOnly cookie. Only the token's
// hash is stored.
type Session struct {
	ID            string
	TokenHash     string
	PrincipalKind PrincipalKind
	PrincipalID   string
	Source        SessionSource
	SourceKeyID   string // API key the session was exchanged from, if any
	Identity      string // registry subject for OIDC sessions
	IDTokenHint   string // kept to ask the provider to end its session on logout
	CreatedAt     time.Time
	ExpiresAt     time.Time
	RevokedAt     *time.Time
}

// NewSessionToken returns a fresh token and its stored hash.
func NewSessionToken(random io.Reader) (token, hash string, err error) {
	b := make([]byte, 32)
	if _, err := io.ReadFull(random, b); err != nil {
		return "", "", Internal(err, "could not generate a session token")
	}
	token = SessionTokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	return token, HashSecret(token), nil
}

// LooksLikeSessionToken is a cheap shape check done before any lookup.
func LooksLikeSessionToken(s string) bool {
	return strings.HasPrefix(s, SessionTokenPrefix) && len(s) == len(SessionTokenPrefix)+43
}

var (
	ErrSessionExpired = NewBase(KindUnauthenticated, CodeSessionExpired, "the session has expired; sign in again")
	ErrSessionRevoked = NewBase(KindUnauthenticated, CodeSessionRevoked, "the session has ended; sign in again")
	ErrUserNotActive  = NewBase(KindUnauthenticated, CodeUserNotActive, "the account is not active")
)

// SessionSubject is what a session's validity depends on besides the session
// row itself, read fresh on every request.
type SessionSubject struct {
	User           *User           // set for user sessions
	ServiceAccount *ServiceAccount // set for service-account sessions
	SourceKey      *APIKey         // set when the session came from an API key
}

// CheckSession applies every session validity rule at now: not revoked, not
// expired, the source key still usable, the principal still active. Roles are
// not cached in the session: the caller builds the Principal from Subject.
func CheckSession(s Session, subj SessionSubject, now time.Time) error {
	if s.RevokedAt != nil {
		return ErrSessionRevoked
	}
	if !now.Before(s.ExpiresAt) {
		return ErrSessionExpired
	}
	if s.SourceKeyID != "" {
		if subj.SourceKey == nil {
			return ErrSessionRevoked
		}
		if err := subj.SourceKey.CheckUsable(now); err != nil {
			return err
		}
	}
	return CheckPrincipalActive(s.PrincipalKind, subj)
}

// CheckPrincipalActive is shared by sessions and API keys: a user must be
// active (invited users have no access, even with personal keys); a service
// account must be active.
func CheckPrincipalActive(kind PrincipalKind, subj SessionSubject) error {
	switch kind {
	case PrincipalUser:
		if subj.User == nil || subj.User.Status != StatusActive {
			return ErrUserNotActive
		}
	case PrincipalServiceAccount:
		if subj.ServiceAccount == nil || !subj.ServiceAccount.Active {
			return ErrUserNotActive
		}
	default:
		return ErrUnauthenticated
	}
	return nil
}

// PrincipalOf builds the request principal from current rows.
func PrincipalOf(subj SessionSubject) Principal {
	if subj.User != nil {
		return Principal{Kind: PrincipalUser, ID: subj.User.ID, Email: subj.User.Email, Name: subj.User.FullName, Role: subj.User.Role,
			Scope: ScopeCompany}
	}
	if subj.ServiceAccount != nil {
		sa := subj.ServiceAccount
		scope := sa.Scope
		if scope == "" {
			scope = ScopeCompany
		}
		return Principal{Kind: PrincipalServiceAccount, ID: sa.ID, Name: sa.Name, Role: sa.Role, Scope: scope}
	}
	return Principal{}
}
