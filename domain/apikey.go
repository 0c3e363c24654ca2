package domain

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

const (
	// APIKeyPrefix starts every engine API key, so scanners can spot leaks.
	APIKeyPrefix = "td_"
	// APIKeyDisplayLen is how many leading characters of a key are kept in
	// clear text to tell keys apart in lists.
	APIKeyDisplayLen = 10
	apiKeyRandomLen  = 32
	maxKeyNameLen    = 100
)

// APIKey is a stored API key. The secret itself is never stored: only its
// SHA-256 and a short display prefix. A key is personal (UserID set) or
// belongs to a service account (ServiceAccountID set), never both.
type APIKey struct {
	ID               string
	Name             string
	Prefix           string
	Hash             string
	UserID           string
	ServiceAccountID string
	CreatedBy        string
	CreatedAt        time.Time
	LastUsedAt       *time.Time
	ExpiresAt        *time.Time
	RevokedAt        *time.Time
}

// Personal reports whether the key belongs to a user.
func (k APIKey) Personal() bool { return k.UserID != "" }

// NewAPIKeySecret returns a fresh key: "td_" + base64url(32 random bytes).
func NewAPIKeySecret(random io.Reader) (string, error) {
	b := make([]byte, apiKeyRandomLen)
	if _, err := io.ReadFull(random, b); err != nil {
		return "", Internal(err, "could not generate an API key")
	}
	return APIKeyPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// HashSecret is the stored form of a key or session token (SHA-256, hex).
// Keys carry 256 bits of entropy, so a fast unsalted hash is enough.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// SecretsEqual compares two secrets in constant time.
func SecretsEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// DisplayPrefix is the part of a key shown in lists.
func DisplayPrefix(secret string) string {
	if len(secret) < APIKeyDisplayLen {
		return secret
	}
	return secret[:APIKeyDisplayLen]
}

// LooksLikeAPIKey is a cheap shape check done before any database lookup.
func LooksLikeAPIKey(s string) bool {
	return strings.HasPrefix(s, APIKeyPrefix) && len(s) == len(APIKeyPrefix)+base64.RawURLEncoding.EncodedLen(apiKeyRandomLen)
}

// NewAPIKey validates the parts of a key to be created. Exactly one of userID
// and serviceAccountID must be set; expiresAt, when given, must be in the future.
func NewAPIKey(id, name, secret, userID, serviceAccountID, createdBy string, expiresAt *time.Time, now time.Time) (APIKey, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return APIKey{}, Invalid("name", "name is required")
	}
	if utf8.RuneCountInString(name) > maxKeyNameLen {
		return APIKey{}, Invalid("name", "name is longer than %d characters", maxKeyNameLen)
	}
	if (userID == "") == (serviceAccountID == "") {
		return APIKey{}, Invalid("service_account_id", "a key belongs to exactly one user or one service account")
	}
	if expiresAt != nil && !expiresAt.After(now) {
		return APIKey{}, Invalid("expires_at", "expires_at must be in the future")
	}
	return APIKey{
		ID: id, Name: name, Prefix: DisplayPrefix(secret), Hash: HashSecret(secret),
		UserID: userID, ServiceAccountID: serviceAccountID, CreatedBy: createdBy,
		CreatedAt: now, ExpiresAt: expiresAt,
	}, nil
}

// Errors for unusable keys. They are distinct so clients can tell a rotated
// key from an expired one.
var (
	ErrAPIKeyRevoked = NewBase(KindUnauthenticated, CodeAPIKeyRevoked, "the API key has been revoked")
	ErrAPIKeyExpired = NewBase(KindUnauthenticated, CodeAPIKeyExpired, "the API key has expired")
)

// CheckUsable reports why k cannot be used at now, if it cannot.
func (k APIKey) CheckUsable(now time.Time) error {
	if k.RevokedAt != nil {
		return ErrAPIKeyRevoked
	}
	if k.ExpiresAt != nil && !now.Before(*k.ExpiresAt) {
		return ErrAPIKeyExpired
	}
	return nil
}

// Revoke marks k revoked at now; revoking twice keeps the first time.
func (k *APIKey) Revoke(now time.Time) {
	if k.RevokedAt == nil {
		k.RevokedAt = &now
	}
}

// ServiceAccount is a non-human principal with its own lifecycle. Its role is
// member or viewer: a service account is never an administrator. Its scope,
// fixed at creation, says which threads it reads (see ReadScope).
type ServiceAccount struct {
	ID        string
	Name      string
	Role      Role
	Scope     ReadScope
	Active    bool
	CreatedBy string
	CreatedAt time.Time
}

// NewServiceAccount validates a service account to be created.
func NewServiceAccount(id, name string, role Role, scope ReadScope, createdBy string, now time.Time) (ServiceAccount, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return ServiceAccount{}, Invalid("name", "service account name is required")
	}
	if utf8.RuneCountInString(name) > maxKeyNameLen {
		return ServiceAccount{}, Invalid("name", "name is longer than %d characters", maxKeyNameLen)
	}
	switch role {
	case RoleMember, RoleViewer:
	case RoleAdmin:
		return ServiceAccount{}, Invalid("service_account_role", "a service account cannot be an admin; use member or viewer")
	default:
		return ServiceAccount{}, Invalid("service_account_role", "unknown role %q: must be member or viewer", role)
	}
	scope, err := ParseReadScope(string(scope))
	if err != nil {
		return ServiceAccount{}, err
	}
	return ServiceAccount{ID: id, Name: name, Role: role, Scope: scope, Active: true, CreatedBy: createdBy, CreatedAt: now}, nil
}
