package ports

import (
	"context"
	"time"

	"github.com/threadengine/engine/domain"
)

// Clock is the source of "now". Tests inject a fake to move time.
type Clock interface{ Now() time.Time }

// SystemClock is the real clock, in UTC.
type SystemClock struct{}

// Now returns the current UTC time.
func (SystemClock) Now() time.Time { return time.Now().UTC() }

// NewTicker ticks every d. Background loops take their tickers from the
// clock they are given (app/delivery), so a test under testing/synctest
// drives both with the bubble's time.
func (SystemClock) NewTicker(d time.Duration) *time.Ticker { return time.NewTicker(d) }

// UserUpdateFn mutates a user inside the store's transaction. activeAdminIDs is
// the set of active human admins, locked for the duration of the transaction,
// so the closure can check domain.RequireActiveAdminRemains safely.
type UserUpdateFn func(u *domain.User, activeAdminIDs []string) error

// Users stores human users.
type Users interface {
	// CreateUser inserts u; an email already taken gives CodeEmailTaken.
	CreateUser(ctx context.Context, u domain.User) error
	GetUser(ctx context.Context, id string) (domain.User, error)
	// GetUserByEmail matches case-insensitively.
	GetUserByEmail(ctx context.Context, email string) (domain.User, error)
	ListUsers(ctx context.Context) ([]domain.User, error)
	// UpdateUser locks the user and the active-admin set, runs fn, stores the
	// result and applies domain.EffectsOf(before, after) (revoking sessions
	// and keys) in the same transaction. If fn fails nothing is written.
	UpdateUser(ctx context.Context, id string, fn UserUpdateFn) (domain.User, error)
	// CountUsers is used to detect a fresh installation.
	CountUsers(ctx context.Context) (int, error)
}

// ServiceAccounts stores non-human principals.
type ServiceAccounts interface {
	CreateServiceAccount(ctx context.Context, sa domain.ServiceAccount) error
	GetServiceAccount(ctx context.Context, id string) (domain.ServiceAccount, error)
	ListServiceAccounts(ctx context.Context) ([]domain.ServiceAccount, error)
}

// APIKeyFilter narrows ListAPIKeys; zero values mean "any".
type APIKeyFilter struct {
	UserID         string
	IncludeRevoked bool
}

// APIKeys stores API keys (hashes only).
type APIKeys interface {
	CreateAPIKey(ctx context.Context, k domain.APIKey) error
	GetAPIKey(ctx context.Context, id string) (domain.APIKey, error)
	GetAPIKeyByHash(ctx context.Context, hash string) (domain.APIKey, error)
	ListAPIKeys(ctx context.Context, f APIKeyFilter) ([]domain.APIKey, error)
	// RevokeAPIKey marks the key revoked and revokes every session created
	// from it, in one transaction. Revoking a revoked key is a no-op.
	RevokeAPIKey(ctx context.Context, id string, now time.Time) (domain.APIKey, error)
	// TouchAPIKey records use; it may be batched or skipped under load.
	TouchAPIKey(ctx context.Context, id string, now time.Time) error
}

// Sessions stores browser sessions (token hashes only).
type Sessions interface {
	CreateSession(ctx context.Context, s domain.Session) error
	GetSessionByTokenHash(ctx context.Context, hash string) (domain.Session, error)
	RevokeSession(ctx context.Context, id string, now time.Time) error
	// DeleteExpiredSessions removes sessions that expired before cutoff.
	DeleteExpiredSessions(ctx context.Context, cutoff time.Time) (int, error)
}

// IdentityBinding links a registry identity (issuer, subject) to a user.
type IdentityBinding struct {
	Issuer    string
	Subject   string
	UserID    string
	Email     string
	Active    bool
	CreatedAt time.Time
}

// IdentityBindings stores OIDC identity bindings.
type IdentityBindings interface {
	GetBinding(ctx context.Context, issuer, subject string) (IdentityBinding, error)
	GetBindingByUser(ctx context.Context, userID string) (IdentityBinding, error)
	// CreateBinding inserts b; an identity or user already bound gives a conflict.
	CreateBinding(ctx context.Context, b IdentityBinding) error
}

// AuditEntry is one administrative action, kept for operators.
type AuditEntry struct {
	ID        string
	At        time.Time
	ActorKind domain.PrincipalKind
	ActorID   string
	Action    string
	Target    string
	Details   map[string]any
}

// Audit records administrative actions.
type Audit interface {
	RecordAudit(ctx context.Context, e AuditEntry) error
}

// Settings stores engine settings changed at run time (e.g. from the UI).
type Settings interface {
	// GetSetting returns the value and true, or "" and false when unset.
	GetSetting(ctx context.Context, key string) (string, bool, error)
	PutSetting(ctx context.Context, key, value, updatedBy string, now time.Time) error
	DeleteSetting(ctx context.Context, key string) error
}

// Installation holds this installation's identity, created on first start.
type Installation interface {
	// InstallationID returns the stored id, creating it with newID if absent.
	InstallationID(ctx context.Context, newID string, now time.Time) (string, error)
}
