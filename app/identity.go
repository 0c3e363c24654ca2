package app

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// OwnerSettingKey is the Settings key holding the owner's user id, written by
// BootstrapOwnerHandler and read by ExchangeLicenseKeyHandler.
const OwnerSettingKey = "owner_user_id"

// touchInterval is how stale a key's last_used_at may get before a use
// rewrites it.
const touchInterval = time.Minute

// maxKeyLifetimeDays bounds expires_in_days so a typo cannot mint a
// practically eternal key by overflow.
const maxKeyLifetimeDays = 3650

// IdentityDeps are the ports and knobs Identity needs.
type IdentityDeps struct {
	Users           ports.Users
	ServiceAccounts ports.ServiceAccounts
	APIKeys         ports.APIKeys
	Sessions        ports.Sessions
	Audit           ports.Audit
	// Settings is optional; without it the license exchange has no owner.
	Settings ports.Settings
	Clock    ports.Clock
	Random   io.Reader
	NewID    func() string
	// SessionTTL defaults to domain.DefaultSessionTTL.
	SessionTTL time.Duration
	// LicenseKey is registry.license_key; empty disables the license exchange.
	LicenseKey string
	// LicenseOwner, when set, names (creating if needed) the license owner's
	// user on an installation that has no owner yet (see SignIn.EnsureLicenseOwner).
	LicenseOwner func(ctx context.Context) (string, error)
	// AuthCacheTTL is auth.cache_ttl: how long a successful API key or
	// session authentication is reused without reading the database. Zero
	// disables the cache. See authCache for what stays exact.
	AuthCacheTTL time.Duration
	// Broadcast, when set, tells every engine sharing the database about
	// credential changes, so each drops its cached authentications and
	// rechecks the open sockets of the principal concerned at once.
	Broadcast ports.Broadcast
	// Metrics counts refused credentials (optional).
	Metrics ports.Metrics
	Log     *slog.Logger
}

// Identity holds what the user, API key and session use cases share: ports,
// authentication cache, audit log. The use cases are its Application()'s
// handlers; IdentityQueries.Authenticator is what every transport
// authenticates through.
type Identity struct {
	d     IdentityDeps
	cache *authCache // nil when disabled

	hmu   sync.Mutex
	hooks []func(principalID string)
}

// SetLicenseOwner sets IdentityDeps.LicenseOwner after construction: the
// sign-in use case that resolves the owner is built on top of Identity.
// Call it before serving requests.
func (s *Identity) SetLicenseOwner(fn func(ctx context.Context) (string, error)) {
	s.d.LicenseOwner = fn
}

// NewIdentity builds the identity use cases. It panics on missing required
// dependencies: that is a wiring bug, not a runtime condition.
func NewIdentity(d IdentityDeps) *Identity {
	if d.Users == nil || d.ServiceAccounts == nil || d.APIKeys == nil || d.Sessions == nil || d.Audit == nil ||
		d.Clock == nil || d.Random == nil || d.NewID == nil {
		panic("app.NewIdentity: missing dependency")
	}
	if d.SessionTTL <= 0 {
		d.SessionTTL = domain.DefaultSessionTTL
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Metrics == nil {
		d.Metrics = ports.NopMetrics{}
	}
	s := &Identity{d: d, cache: newAuthCache(d.AuthCacheTTL)}
	inv, changed := s.Invalidate, s.credentialsChanged
	s.d.Users = invalidatingUsers{Users: d.Users, inv: inv, changed: changed}
	s.d.ServiceAccounts = invalidatingServiceAccounts{ServiceAccounts: d.ServiceAccounts, inv: inv}
	s.d.APIKeys = invalidatingAPIKeys{APIKeys: d.APIKeys, inv: inv, changed: changed}
	s.d.Sessions = invalidatingSessions{Sessions: d.Sessions, inv: inv, changed: changed}
	if d.Broadcast != nil {
		d.Broadcast.Listen(ports.ChannelIdentity, s.heard)
	}
	return s
}

func (s *Identity) now() time.Time { return s.d.Clock.Now().UTC() }

// SessionTTL is the lifetime of new browser sessions.
func (s *Identity) SessionTTL() time.Duration { return s.d.SessionTTL }

// notFoundAs replaces a not-found error with repl, keeping other failures.
func notFoundAs(err, repl error) error {
	if domain.KindOf(err) == domain.KindNotFound {
		return repl
	}
	return err
}

// --- users ---

// audit records an action; a failure is logged, not returned, because the
// action itself has already been committed.
func (s *Identity) audit(ctx context.Context, actor domain.Principal, action, target string, details map[string]any) {
	e := ports.AuditEntry{ID: s.d.NewID(), At: s.now(), ActorKind: actor.Kind, ActorID: actor.ID, Action: action, Target: target, Details: details}
	if err := s.d.Audit.RecordAudit(ctx, e); err != nil {
		s.d.Log.Error("audit record failed", "action", action, "target", target, "err", err)
	}
}
