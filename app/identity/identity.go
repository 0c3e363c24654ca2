package identity

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/threadengine/engine/app/auditctx"
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

// Deps are the ports and knobs the identity use cases need.
type Deps struct {
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
	// user on an installation that has no owner yet (see signin.SignIn.EnsureLicenseOwner).
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
	Metrics ports.AuthMetrics
	Log     *slog.Logger
}

// Module wires the user, API key and session use cases: it wraps the ports
// so every identity change drops cached authentications (authcache.go) and
// reaches every replica (broadcast.go), and builds one handler per use case
// (Application), each given only the ports it uses.
// Application().Queries.Authenticator() is what every transport
// authenticates through.
type Module struct {
	d       Deps
	cache   *authCache // nil when disabled
	changes *credentialChanges
	app     Application
}

// SetLicenseOwner sets Deps.LicenseOwner after construction: the sign-in use
// case that resolves the owner is built on top of the identity use cases.
// Call it before serving requests.
func (m *Module) SetLicenseOwner(fn func(ctx context.Context) (string, error)) {
	m.d.LicenseOwner = fn
}

// licenseOwner calls Deps.LicenseOwner as it is now ("" when unset), so a
// handler built before SetLicenseOwner sees the owner it sets.
func (m *Module) licenseOwner(ctx context.Context) (string, error) {
	if m.d.LicenseOwner == nil {
		return "", nil
	}
	return m.d.LicenseOwner(ctx)
}

// New builds the identity use cases. It panics on missing required
// dependencies: that is a wiring bug, not a runtime condition.
func New(d Deps) *Module {
	if d.Users == nil || d.ServiceAccounts == nil || d.APIKeys == nil || d.Sessions == nil || d.Audit == nil ||
		d.Clock == nil || d.Random == nil || d.NewID == nil {
		panic("identity.New: missing dependency")
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
	m := &Module{d: d, cache: newAuthCache(d.AuthCacheTTL)}
	m.changes = &credentialChanges{cache: m.cache, bus: d.Broadcast, log: d.Log}
	inv, changed := m.Invalidate, m.changes.changed
	m.d.Users = invalidatingUsers{Users: d.Users, inv: inv, changed: changed}
	m.d.ServiceAccounts = invalidatingServiceAccounts{ServiceAccounts: d.ServiceAccounts, inv: inv}
	m.d.APIKeys = invalidatingAPIKeys{APIKeys: d.APIKeys, inv: inv, changed: changed}
	m.d.Sessions = invalidatingSessions{Sessions: d.Sessions, inv: inv, changed: changed}
	if d.Broadcast != nil {
		d.Broadcast.Listen(ports.ChannelIdentity, m.changes.heard)
	}
	m.app = m.build()
	return m
}

// SessionTTL is the lifetime of new browser sessions.
func (m *Module) SessionTTL() time.Duration { return m.d.SessionTTL }

// OnCredentialsChanged registers fn, called on every replica after a
// principal's credentials may have changed (a user updated, one of its keys
// revoked), with that principal's id or AnyPrincipal. Transports holding
// long-lived connections recheck them there, so a revoked key or a suspended
// or archived user loses its open sockets at once, on every replica.
func (m *Module) OnCredentialsChanged(fn func(principalID string)) { m.changes.onChanged(fn) }

// now is the identity use cases' clock, in UTC.
func now(c ports.Clock) time.Time { return c.Now().UTC() }

// notFoundAs replaces a not-found error with repl, keeping other failures.
func notFoundAs(err, repl error) error {
	if domain.KindOf(err) == domain.KindNotFound {
		return repl
	}
	return err
}

// auditTrail records an action; a failure is logged, not returned, because
// the action itself has already been committed.
type auditTrail struct {
	store ports.Audit
	clock ports.Clock
	newID func() string
	log   *slog.Logger
}

func (a auditTrail) record(ctx context.Context, actor domain.Principal, action, target string, details map[string]any) {
	e := ports.AuditEntry{ID: a.newID(), At: now(a.clock), ActorKind: actor.Kind, ActorID: actor.ID, Action: action, Target: target, Details: details}
	// The action has committed: its line is written even if ctx ends now.
	ctx, cancel := auditctx.Detached(ctx)
	defer cancel()
	if err := a.store.RecordAudit(ctx, e); err != nil {
		a.log.Error("audit record failed", "action", action, "target", target, "err", err)
	}
}
