package app

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"io"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// OwnerSettingKey is the Settings key holding the owner's user id, written by
// BootstrapOwner and read by ExchangeLicenseKey.
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
	Log          *slog.Logger
}

// Identity holds the user, API key and session use cases. It is also the
// Authenticator every transport uses.
type Identity struct {
	d     IdentityDeps
	cache *authCache // nil when disabled
}

var _ Authenticator = (*Identity)(nil)

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
	s := &Identity{d: d, cache: newAuthCache(d.AuthCacheTTL)}
	inv := s.Invalidate
	s.d.Users = invalidatingUsers{Users: d.Users, inv: inv}
	s.d.ServiceAccounts = invalidatingServiceAccounts{ServiceAccounts: d.ServiceAccounts, inv: inv}
	s.d.APIKeys = invalidatingAPIKeys{APIKeys: d.APIKeys, inv: inv}
	s.d.Sessions = invalidatingSessions{Sessions: d.Sessions, inv: inv}
	return s
}

func (s *Identity) now() time.Time { return s.d.Clock.Now().UTC() }

// SessionTTL is the lifetime of new browser sessions.
func (s *Identity) SessionTTL() time.Duration { return s.d.SessionTTL }

var errBadCredential = domain.E(domain.KindUnauthenticated, domain.CodeUnauthenticated, "the credential is not valid")

// AuthenticateAPIKey checks a "td_…" key: it must exist, be unrevoked and
// unexpired, and its owner (user or service account) must be active.
func (s *Identity) AuthenticateAPIKey(ctx context.Context, secret string) (domain.Principal, error) {
	if !domain.LooksLikeAPIKey(secret) {
		return domain.Principal{}, errBadCredential
	}
	hash := domain.HashSecret(secret)
	e := s.cache.key(hash)
	if e == nil {
		gen := s.cache.generation()
		k, err := s.d.APIKeys.GetAPIKeyByHash(ctx, hash)
		if err != nil {
			return domain.Principal{}, notFoundAs(err, errBadCredential)
		}
		if err := k.CheckUsable(s.now()); err != nil {
			return domain.Principal{}, err
		}
		subj, kind, err := s.keySubject(ctx, k)
		if err != nil {
			return domain.Principal{}, err
		}
		if err := domain.CheckPrincipalActive(kind, subj); err != nil {
			return domain.Principal{}, err
		}
		e = s.cache.putKey(hash, gen, k, subj, kind)
		if e == nil { // cache disabled
			e = &keyEntry{key: k, subj: subj, kind: kind}
			if k.LastUsedAt != nil {
				e.lastUsed.Store(k.LastUsedAt.UnixNano())
			}
		}
	}
	k, subj := e.key, e.subj
	// Checked again on a cache hit: expiry is against the current clock.
	now := s.now()
	if err := k.CheckUsable(now); err != nil {
		return domain.Principal{}, err
	}
	if err := domain.CheckPrincipalActive(e.kind, subj); err != nil {
		return domain.Principal{}, err
	}
	// last_used_at is informational: skip the write (which on SQLite takes
	// the database write lock) while the stored value is recent. The
	// compare-and-swap lets one of several concurrent hits do the write.
	last := e.lastUsed.Load()
	if (last == 0 || now.Sub(time.Unix(0, last)) >= touchInterval) && e.lastUsed.CompareAndSwap(last, now.UnixNano()) {
		if err := s.d.APIKeys.TouchAPIKey(ctx, k.ID, now); err != nil {
			s.d.Log.Debug("touch api key", "key_id", k.ID, "err", err)
		}
	}
	p := domain.PrincipalOf(subj)
	p.Via = domain.CredentialAPIKey
	p.KeyID = k.ID
	return p, nil
}

// keySubject loads the owner of k. A missing owner row leaves the subject
// empty, which CheckPrincipalActive refuses.
func (s *Identity) keySubject(ctx context.Context, k domain.APIKey) (domain.SessionSubject, domain.PrincipalKind, error) {
	if k.Personal() {
		u, err := s.d.Users.GetUser(ctx, k.UserID)
		if err != nil {
			return domain.SessionSubject{}, domain.PrincipalUser, notFoundAs(err, domain.ErrUserNotActive)
		}
		return domain.SessionSubject{User: &u}, domain.PrincipalUser, nil
	}
	sa, err := s.d.ServiceAccounts.GetServiceAccount(ctx, k.ServiceAccountID)
	if err != nil {
		return domain.SessionSubject{}, domain.PrincipalServiceAccount, notFoundAs(err, domain.ErrUserNotActive)
	}
	return domain.SessionSubject{ServiceAccount: &sa}, domain.PrincipalServiceAccount, nil
}

// AuthenticateSession checks a browser session token with domain.CheckSession
// against freshly read user, service account and source key rows, so role
// changes, suspensions and key revocations apply on the next request.
func (s *Identity) AuthenticateSession(ctx context.Context, token string) (domain.Principal, error) {
	p, _, err := s.authenticateSession(ctx, token)
	return p, err
}

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

// SessionForToken returns the valid session a token names together with its
// principal (for GET /auth/session and logout).
func (s *Identity) SessionForToken(ctx context.Context, token string) (domain.Principal, domain.Session, error) {
	return s.authenticateSession(ctx, token)
}

// notFoundAs replaces a not-found error with repl, keeping other failures.
func notFoundAs(err, repl error) error {
	if domain.KindOf(err) == domain.KindNotFound {
		return repl
	}
	return err
}

// --- users ---

// InviteUser creates an invited user (administrators only). An identical
// repeat (same email, name and role of a still-invited user) returns the
// existing invitation with created=false; any other use of the email is a
// conflict, including archived users, who cannot be re-invited.
func (s *Identity) InviteUser(ctx context.Context, email, fullName string, role domain.Role) (domain.User, bool, error) {
	actor, err := Require(ctx, domain.PermUsersManage)
	if err != nil {
		return domain.User{}, false, err
	}
	now := s.now()
	u, err := domain.NewInvitedUser(s.d.NewID(), email, fullName, role, now)
	if err != nil {
		return domain.User{}, false, err
	}
	if existing, ok, err := s.sameInvitation(ctx, u); err != nil || ok {
		return existing, false, err
	}
	if err := s.d.Users.CreateUser(ctx, u); err != nil {
		if domain.CodeOf(err) == domain.CodeEmailTaken {
			// A concurrent identical invite may have won the race.
			if existing, ok, err2 := s.sameInvitation(ctx, u); err2 == nil && ok {
				return existing, false, nil
			}
		}
		return domain.User{}, false, err
	}
	s.audit(ctx, actor, "user.invited", u.ID, map[string]any{"email": u.Email, "role": string(u.Role)})
	return u, true, nil
}

func errEmailTaken() error {
	e := domain.E(domain.KindConflict, domain.CodeEmailTaken, "a user with this email already exists")
	e.Field = "email"
	return e
}

// sameInvitation reports whether u repeats an existing invitation exactly. It
// returns an email_taken conflict when the email is used differently.
func (s *Identity) sameInvitation(ctx context.Context, u domain.User) (domain.User, bool, error) {
	existing, err := s.d.Users.GetUserByEmail(ctx, u.Email)
	if err != nil {
		if domain.KindOf(err) == domain.KindNotFound {
			return domain.User{}, false, nil
		}
		return domain.User{}, false, err
	}
	if existing.Status == domain.StatusInvited && existing.Role == u.Role && existing.FullName == u.FullName {
		return existing, true, nil
	}
	return domain.User{}, false, errEmailTaken()
}

// ListUsers returns every user sorted by email (humans with users.read).
func (s *Identity) ListUsers(ctx context.Context) ([]domain.User, error) {
	if _, err := Require(ctx, domain.PermUsersRead); err != nil {
		return nil, err
	}
	us, err := s.d.Users.ListUsers(ctx)
	if err != nil {
		return nil, err
	}
	sort.Slice(us, func(i, j int) bool { return us[i].Email < us[j].Email })
	return us, nil
}

// UserPatch changes a user; nil fields stay as they are.
type UserPatch struct {
	FullName *string
	Role     *string
	Status   *string
}

// UpdateUser renames, changes the role of, suspends, reactivates or archives a
// user (administrators only). The last-active-admin invariant is checked
// inside the store's transaction against the locked set of active admins.
func (s *Identity) UpdateUser(ctx context.Context, id string, patch UserPatch) (domain.User, error) {
	actor, err := Require(ctx, domain.PermUsersManage)
	if err != nil {
		return domain.User{}, err
	}
	var role domain.Role
	var status domain.Status
	if patch.Role != nil {
		if role, err = domain.ParseRole(*patch.Role); err != nil {
			return domain.User{}, err
		}
	}
	if patch.Status != nil {
		if status, err = domain.ParseStatus(*patch.Status); err != nil {
			return domain.User{}, err
		}
	}
	var before domain.User
	now := s.now()
	after, err := s.d.Users.UpdateUser(ctx, id, func(u *domain.User, activeAdminIDs []string) error {
		before = *u
		if patch.FullName != nil {
			if err := u.Rename(*patch.FullName, now); err != nil {
				return err
			}
		}
		if patch.Role != nil {
			if err := u.ChangeRole(role, now); err != nil {
				return err
			}
		}
		if patch.Status != nil {
			if err := u.ChangeStatusByAdmin(status, now); err != nil {
				return err
			}
		}
		if before.IsActiveAdmin() && !u.IsActiveAdmin() {
			return domain.RequireActiveAdminRemains(activeAdminIDs, *u)
		}
		return nil
	})
	if err != nil {
		return domain.User{}, err
	}
	details := map[string]any{}
	if before.FullName != after.FullName {
		details["full_name"] = after.FullName
	}
	if before.Role != after.Role {
		details["role"] = map[string]string{"from": string(before.Role), "to": string(after.Role)}
	}
	if before.Status != after.Status {
		details["status"] = map[string]string{"from": string(before.Status), "to": string(after.Status)}
	}
	if len(details) > 0 {
		s.audit(ctx, actor, "user.updated", after.ID, details)
	}
	return after, nil
}

// ActivateBySignIn records a verified sign-in of userID: an invitation becomes
// active, an active user gets its last-login time. It is not exposed to
// administrators (they cannot activate invitations); the OIDC sign-in and the
// test harness call it after the person has proven their email.
func (s *Identity) ActivateBySignIn(ctx context.Context, userID string) (domain.User, error) {
	u, changed, err := activateUser(ctx, s.d.Users, userID, s.now())
	if err != nil {
		return domain.User{}, err
	}
	if changed {
		s.audit(ctx, domain.Principal{Kind: domain.PrincipalUser, ID: u.ID}, "user.activated", u.ID, map[string]any{"email": u.Email})
	}
	return u, nil
}

// activateUser applies the sign-in activation rule under the user's row lock
// and reports whether the status changed (for the audit entry).
func activateUser(ctx context.Context, users ports.Users, userID string, now time.Time) (domain.User, bool, error) {
	var before domain.Status
	u, err := users.UpdateUser(ctx, userID, func(u *domain.User, _ []string) error {
		before = u.Status
		return u.ActivateBySignIn(now)
	})
	return u, err == nil && before != u.Status, err
}

// errOwnerExists is returned by BootstrapOwner once an installation has an admin.
var errOwnerExists = domain.E(domain.KindConflict, domain.CodeInvalidStatusTransition,
	"an active administrator already exists; bootstrap-owner only sets up a fresh installation (use an admin key to invite users)")

// BootstrapOwner creates the first administrator from the command line: a new
// active admin, or an existing invited/suspended user promoted and activated.
// It also creates a personal API key and returns its plaintext once. It
// refuses when any active admin exists, so it cannot be used to take over an
// installation.
func (s *Identity) BootstrapOwner(ctx context.Context, email, fullName string) (domain.User, string, error) {
	users, err := s.d.Users.ListUsers(ctx)
	if err != nil {
		return domain.User{}, "", err
	}
	for _, u := range users {
		if u.IsActiveAdmin() {
			return domain.User{}, "", errOwnerExists
		}
	}
	now := s.now()
	owner, err := domain.NewInvitedUser(s.d.NewID(), email, fullName, domain.RoleAdmin, now)
	if err != nil {
		return domain.User{}, "", err
	}
	existing, err := s.d.Users.GetUserByEmail(ctx, owner.Email)
	switch {
	case err == nil:
		owner, err = s.d.Users.UpdateUser(ctx, existing.ID, func(u *domain.User, _ []string) error {
			if fullName != "" {
				if err := u.Rename(fullName, now); err != nil {
					return err
				}
			}
			if err := u.ChangeRole(domain.RoleAdmin, now); err != nil {
				return err
			}
			if u.Status == domain.StatusSuspended {
				return u.ChangeStatusByAdmin(domain.StatusActive, now)
			}
			return u.ActivateBySignIn(now)
		})
		if err != nil {
			return domain.User{}, "", err
		}
	case domain.KindOf(err) == domain.KindNotFound:
		// The operator running the command vouches for the address.
		if err := owner.ActivateBySignIn(now); err != nil {
			return domain.User{}, "", err
		}
		owner.LastLoginAt = nil
		if err := s.d.Users.CreateUser(ctx, owner); err != nil {
			return domain.User{}, "", err
		}
	default:
		return domain.User{}, "", err
	}
	secret, k, err := s.newKey(ctx, "bootstrap owner key", owner.ID, "", owner.ID, nil, now)
	if err != nil {
		return domain.User{}, "", err
	}
	if s.d.Settings != nil {
		if err := s.d.Settings.PutSetting(ctx, OwnerSettingKey, owner.ID, owner.ID, now); err != nil {
			return domain.User{}, "", err
		}
	}
	actor := domain.Principal{Kind: domain.PrincipalUser, ID: owner.ID}
	s.audit(ctx, actor, "owner.bootstrapped", owner.ID, map[string]any{"email": owner.Email, "api_key_id": k.ID})
	return owner, secret, nil
}

// --- API keys ---

// NewServiceAccountInput asks CreateAPIKey to create a service account.
type NewServiceAccountInput struct {
	Name string
	Role string
}

// CreateAPIKeyInput describes a key to create. Without ServiceAccountID or
// CreateServiceAccount the key is personal (the caller's own).
type CreateAPIKeyInput struct {
	Name                 string
	ExpiresAt            *time.Time
	ExpiresInDays        *int
	ServiceAccountID     string
	CreateServiceAccount *NewServiceAccountInput
}

// CreateAPIKey creates a key and returns its plaintext, which is never
// available again. Personal keys need keys.own; service-account keys (and
// creating service accounts) need keys.manage.
func (s *Identity) CreateAPIKey(ctx context.Context, in CreateAPIKeyInput) (string, domain.APIKey, error) {
	actor, err := RequirePrincipal(ctx)
	if err != nil {
		return "", domain.APIKey{}, err
	}
	now := s.now()
	var expiresAt *time.Time
	switch {
	case in.ExpiresAt != nil && in.ExpiresInDays != nil:
		return "", domain.APIKey{}, domain.Invalid("expires_at", "give expires_at or expires_in_days, not both")
	case in.ExpiresInDays != nil:
		d := *in.ExpiresInDays
		if d < 1 || d > maxKeyLifetimeDays {
			return "", domain.APIKey{}, domain.Invalid("expires_in_days", "expires_in_days must be between 1 and %d", maxKeyLifetimeDays)
		}
		t := now.AddDate(0, 0, d)
		expiresAt = &t
	case in.ExpiresAt != nil:
		t := in.ExpiresAt.UTC()
		expiresAt = &t
	}
	if in.ServiceAccountID != "" && in.CreateServiceAccount != nil {
		return "", domain.APIKey{}, domain.Invalid("service_account_id", "give service_account_id or create_service_account, not both")
	}
	if in.ServiceAccountID == "" && in.CreateServiceAccount == nil {
		if err := actor.Require(domain.PermOwnKeys); err != nil {
			return "", domain.APIKey{}, err
		}
		secret, k, err := s.newKey(ctx, in.Name, actor.ID, "", actor.ID, expiresAt, now)
		if err != nil {
			return "", domain.APIKey{}, err
		}
		s.audit(ctx, actor, "api_key.created", k.ID, map[string]any{"name": k.Name, "kind": "personal"})
		return secret, k, nil
	}
	if err := actor.Require(domain.PermAllKeys); err != nil {
		return "", domain.APIKey{}, err
	}
	saID := in.ServiceAccountID
	if in.CreateServiceAccount != nil {
		role := domain.Role(in.CreateServiceAccount.Role)
		if role == "" {
			role = domain.RoleMember
		}
		name := in.CreateServiceAccount.Name
		if strings.TrimSpace(name) == "" {
			name = in.Name
		}
		sa, err := domain.NewServiceAccount(s.d.NewID(), name, role, actor.ID, now)
		if err != nil {
			if de := domain.AsError(err); de.Field != "" {
				de.Field = "create_service_account." + de.Field
			}
			return "", domain.APIKey{}, err
		}
		// Validate the key before creating the account, so a bad key name
		// does not leave an orphan service account behind.
		if _, err := domain.NewAPIKey("x", in.Name, domain.APIKeyPrefix, "", sa.ID, actor.ID, expiresAt, now); err != nil {
			return "", domain.APIKey{}, err
		}
		if err := s.d.ServiceAccounts.CreateServiceAccount(ctx, sa); err != nil {
			return "", domain.APIKey{}, err
		}
		s.audit(ctx, actor, "service_account.created", sa.ID, map[string]any{"name": sa.Name, "role": string(sa.Role)})
		saID = sa.ID
	} else {
		sa, err := s.d.ServiceAccounts.GetServiceAccount(ctx, saID)
		if err != nil {
			if domain.KindOf(err) == domain.KindNotFound {
				return "", domain.APIKey{}, domain.NotFound("service account")
			}
			return "", domain.APIKey{}, err
		}
		if !sa.Active {
			return "", domain.APIKey{}, domain.E(domain.KindConflict, domain.CodeUserNotActive, "the service account is not active")
		}
	}
	secret, k, err := s.newKey(ctx, in.Name, "", saID, actor.ID, expiresAt, now)
	if err != nil {
		return "", domain.APIKey{}, err
	}
	s.audit(ctx, actor, "api_key.created", k.ID, map[string]any{"name": k.Name, "kind": "service_account", "service_account_id": saID})
	return secret, k, nil
}

func (s *Identity) newKey(ctx context.Context, name, userID, saID, createdBy string, expiresAt *time.Time, now time.Time) (string, domain.APIKey, error) {
	secret, err := domain.NewAPIKeySecret(s.d.Random)
	if err != nil {
		return "", domain.APIKey{}, err
	}
	k, err := domain.NewAPIKey(s.d.NewID(), name, secret, userID, saID, createdBy, expiresAt, now)
	if err != nil {
		return "", domain.APIKey{}, err
	}
	if err := s.d.APIKeys.CreateAPIKey(ctx, k); err != nil {
		return "", domain.APIKey{}, err
	}
	return secret, k, nil
}

// ListAPIKeys returns the caller's own keys, or every key for callers with
// keys.manage. Revoked keys are included (with RevokedAt set).
func (s *Identity) ListAPIKeys(ctx context.Context) ([]domain.APIKey, error) {
	actor, err := RequirePrincipal(ctx)
	if err != nil {
		return nil, err
	}
	f := ports.APIKeyFilter{IncludeRevoked: true}
	if !actor.Can(domain.PermAllKeys) {
		if err := actor.Require(domain.PermOwnKeys); err != nil {
			return nil, err
		}
		f.UserID = actor.ID
	}
	return s.d.APIKeys.ListAPIKeys(ctx, f)
}

// CanManageAllKeys reports whether the caller may see and manage every key.
func CanManageAllKeys(ctx context.Context) bool {
	p, ok := PrincipalFrom(ctx)
	return ok && p.Can(domain.PermAllKeys)
}

// RevokeAPIKey revokes a key and every session created from it. Callers
// without keys.manage may revoke only their own personal keys; other keys are
// reported as not found so their existence does not leak.
func (s *Identity) RevokeAPIKey(ctx context.Context, id string) (domain.APIKey, error) {
	actor, err := RequirePrincipal(ctx)
	if err != nil {
		return domain.APIKey{}, err
	}
	k, err := s.d.APIKeys.GetAPIKey(ctx, id)
	if err != nil {
		if domain.KindOf(err) == domain.KindNotFound {
			return domain.APIKey{}, domain.NotFound("API key")
		}
		return domain.APIKey{}, err
	}
	if !actor.Can(domain.PermAllKeys) {
		if err := actor.Require(domain.PermOwnKeys); err != nil {
			return domain.APIKey{}, err
		}
		if k.UserID != actor.ID {
			return domain.APIKey{}, domain.NotFound("API key")
		}
	}
	k, err = s.d.APIKeys.RevokeAPIKey(ctx, id, s.now())
	if err != nil {
		return domain.APIKey{}, err
	}
	s.audit(ctx, actor, "api_key.revoked", k.ID, map[string]any{"name": k.Name})
	return k, nil
}

// --- sessions ---

// ExchangeAPIKeyForSession turns a valid API key into a browser session. The
// session keeps the key's principal (a service key stays a service account)
// and dies with the key.
func (s *Identity) ExchangeAPIKeyForSession(ctx context.Context, apiKey string) (string, domain.Session, domain.Principal, error) {
	p, err := s.AuthenticateAPIKey(ctx, apiKey)
	if err != nil {
		return "", domain.Session{}, domain.Principal{}, err
	}
	token, sess, err := s.createSession(ctx, p.Kind, p.ID, domain.SessionFromAPIKey, p.KeyID, "", "")
	if err != nil {
		return "", domain.Session{}, domain.Principal{}, err
	}
	p.Via, p.Session = domain.CredentialSession, sess.ID
	return token, sess, p, nil
}

var errLicenseDenied = domain.E(domain.KindUnauthenticated, domain.CodeUnauthenticated, "the license key is not valid")

// ExchangeLicenseKey lets the operator sign in as the owner with the
// configured registry license key. The owner is the admin created by
// `threadengine bootstrap-owner`; it must still be active.
func (s *Identity) ExchangeLicenseKey(ctx context.Context, licenseKey string) (string, domain.Session, domain.Principal, error) {
	if s.d.LicenseKey == "" {
		return "", domain.Session{}, domain.Principal{}, domain.E(domain.KindUnauthenticated, domain.CodeUnauthenticated,
			"license key sign-in is not configured (registry.license_key is empty)")
	}
	got, want := sha256.Sum256([]byte(licenseKey)), sha256.Sum256([]byte(s.d.LicenseKey))
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		return "", domain.Session{}, domain.Principal{}, errLicenseDenied
	}
	ownerID := ""
	if s.d.Settings != nil {
		id, ok, err := s.d.Settings.GetSetting(ctx, OwnerSettingKey)
		if err != nil {
			return "", domain.Session{}, domain.Principal{}, err
		}
		if ok {
			ownerID = id
		}
	}
	if ownerID == "" && s.d.LicenseOwner != nil {
		id, err := s.d.LicenseOwner(ctx)
		if err != nil {
			return "", domain.Session{}, domain.Principal{}, err
		}
		ownerID = id
	}
	if ownerID == "" {
		return "", domain.Session{}, domain.Principal{}, domain.E(domain.KindConflict, domain.CodeNotFound,
			"no owner exists yet: configure registry.url so the registry names the license owner, or run `threadengine bootstrap-owner --email you@example.com`")
	}
	u, err := s.d.Users.GetUser(ctx, ownerID)
	if err != nil {
		return "", domain.Session{}, domain.Principal{}, err
	}
	if err := domain.CheckPrincipalActive(domain.PrincipalUser, domain.SessionSubject{User: &u}); err != nil {
		return "", domain.Session{}, domain.Principal{}, err
	}
	token, sess, err := s.createSession(ctx, domain.PrincipalUser, u.ID, domain.SessionFromLicense, "", "", "")
	if err != nil {
		return "", domain.Session{}, domain.Principal{}, err
	}
	p := domain.PrincipalOf(domain.SessionSubject{User: &u})
	p.Via, p.Session = domain.CredentialSession, sess.ID
	s.audit(ctx, p, "session.license_exchange", u.ID, nil)
	return token, sess, p, nil
}

// StartUserSession opens a browser session for an active user, e.g. after a
// verified OIDC sign-in (source oidc, identity = registry subject).
func (s *Identity) StartUserSession(ctx context.Context, userID string, source domain.SessionSource, identity, idTokenHint string) (string, domain.Session, error) {
	u, err := s.d.Users.GetUser(ctx, userID)
	if err != nil {
		return "", domain.Session{}, err
	}
	if err := domain.CheckPrincipalActive(domain.PrincipalUser, domain.SessionSubject{User: &u}); err != nil {
		return "", domain.Session{}, err
	}
	return s.createSession(ctx, domain.PrincipalUser, u.ID, source, "", identity, idTokenHint)
}

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

// SignOut revokes the session a token names and returns it (the caller may
// need its IDTokenHint for provider logout). Unknown tokens are not an error
// for the caller's purposes but are reported as unauthenticated.
func (s *Identity) SignOut(ctx context.Context, token string) (domain.Session, error) {
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

// audit records an action; a failure is logged, not returned, because the
// action itself has already been committed.
func (s *Identity) audit(ctx context.Context, actor domain.Principal, action, target string, details map[string]any) {
	e := ports.AuditEntry{ID: s.d.NewID(), At: s.now(), ActorKind: actor.Kind, ActorID: actor.ID, Action: action, Target: target, Details: details}
	if err := s.d.Audit.RecordAudit(ctx, e); err != nil {
		s.d.Log.Error("audit record failed", "action", action, "target", target, "err", err)
	}
}
