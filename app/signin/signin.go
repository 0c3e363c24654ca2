package signin

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/threadengine/engine/app/auditctx"
	"github.com/threadengine/engine/app/identity"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// RegistryIdentity is what a verified OIDC sign-in proved about a person.
type RegistryIdentity struct {
	Issuer        string
	Subject       string
	Email         string
	EmailVerified bool
	Name          string
}

// Deps are the ports SignIn needs.
type Deps struct {
	Users    ports.Users
	Bindings ports.IdentityBindings
	// StartSession opens the browser session of a user who signed in
	// (identity's Application().Commands.StartUserSession).
	StartSession identity.StartUserSessionHandler
	// Invalidate drops the cached authentications of the identity use cases
	// (identity.Module.Invalidate) after SignIn has changed users through
	// Users directly: a role or status change must apply on the next request.
	Invalidate func()
	License    *LicenseMonitor
	// Product is registry.product: the license must include it.
	Product string
	Audit   ports.Audit    // optional
	Setting ports.Settings // optional; records the owner for the license-key exchange
	Clock   ports.Clock
	NewID   func() string
	Log     *slog.Logger
}

// SignIn decides who may sign in through the identity registry.
type SignIn struct{ d Deps }

// New builds the sign-in use case; missing required ports panic (a wiring
// bug).
func New(d Deps) *SignIn {
	if d.Users == nil || d.Bindings == nil || d.StartSession == (identity.StartUserSessionHandler{}) || d.Invalidate == nil ||
		d.License == nil || d.Clock == nil || d.NewID == nil {
		panic("signin.New: missing dependency")
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	return &SignIn{d: d}
}

// Result is a successful sign-in.
type Result struct {
	Token   string
	Session domain.Session
	User    domain.User
}

// Available reports whether browser sign-in may start at all (license
// rules); it is checked before sending anyone to the registry.
func (s *SignIn) Available(ctx context.Context) error {
	return CheckLicenseForSignIn(s.d.License.Current(ctx, s.d.Product), s.d.Product)
}

// Complete applies the sign-in rules to a verified registry identity and, if
// they allow it, opens a session:
//
//   - the license must allow browser sign-in (CheckLicenseForSignIn);
//   - a known identity (issuer, subject) signs in through its binding, which
//     must be active, as its bound user, who must not be suspended or archived;
//   - otherwise the registry's email must be verified. The license owner's
//     email gets an active admin (created on first sign-in); anyone else needs
//     an engine-owned user with that email (case-insensitive) that is invited
//     or active and not yet bound to another identity. The first such
//     sign-in activates an invitation and stores the binding.
func (s *SignIn) Complete(ctx context.Context, id RegistryIdentity, idTokenHint string) (Result, error) {
	lic := s.d.License.Current(ctx, s.d.Product)
	if err := CheckLicenseForSignIn(lic, s.d.Product); err != nil {
		return Result{}, err
	}
	if id.Issuer == "" || id.Subject == "" {
		return Result{}, domain.E(domain.KindUnauthenticated, domain.CodeUnauthenticated, "the registry did not identify the person")
	}
	ownerEmail := strings.ToLower(strings.TrimSpace(lic.Info.OwnerEmail))
	var (
		u   domain.User
		err error
	)
	b, berr := s.d.Bindings.GetBinding(ctx, id.Issuer, id.Subject)
	switch {
	case berr == nil:
		u, err = s.viaBinding(ctx, b, ownerEmail)
	case domain.KindOf(berr) == domain.KindNotFound:
		u, err = s.viaEmail(ctx, id, ownerEmail)
	default:
		err = berr
	}
	if err != nil {
		s.d.Log.Info("registry sign-in refused", "issuer", id.Issuer, "subject", id.Subject, "code", domain.CodeOf(err))
		return Result{}, err
	}
	token, sess, err := s.d.StartSession.Handle(ctx, u.ID, domain.SessionFromOIDC, id.Subject, idTokenHint)
	if err != nil {
		return Result{}, err
	}
	s.audit(ctx, u.ID, "user.signed_in", map[string]any{"issuer": id.Issuer, "subject": id.Subject})
	return Result{Token: token, Session: sess, User: u}, nil
}

func (s *SignIn) now() time.Time { return s.d.Clock.Now().UTC() }

// EnsureLicenseOwner makes the registry's license owner an active admin and
// returns their user id. It serves the license-key exchange on a fresh
// installation: the operator proves control of the license, the registry
// names the owner. It needs a valid, unsuspended license, but not managed
// identity or the product entitlement, which only gate browser sign-in.
func (s *SignIn) EnsureLicenseOwner(ctx context.Context) (string, error) {
	st := s.d.License.Refresh(ctx)
	if st.Err != nil {
		return "", st.Err
	}
	if st.Info.Suspended {
		return "", domain.E(domain.KindForbidden, domain.CodeLicenseSuspended, "the registry license is suspended")
	}
	email, err := domain.NormalizeEmail(st.Info.OwnerEmail)
	if err != nil {
		return "", domain.E(domain.KindUnavailable, domain.CodeUnavailable, "the registry did not name a usable license owner email")
	}
	var existing *domain.User
	if u, err := s.d.Users.GetUserByEmail(ctx, email); err == nil {
		existing = &u
	} else if domain.KindOf(err) != domain.KindNotFound {
		return "", err
	}
	u, err := s.ensureOwner(ctx, existing, email, "")
	if err != nil {
		return "", err
	}
	return u.ID, nil
}

// viaBinding signs in a returning identity.
func (s *SignIn) viaBinding(ctx context.Context, b ports.IdentityBinding, ownerEmail string) (domain.User, error) {
	if !b.Active {
		return domain.User{}, domain.E(domain.KindForbidden, domain.CodeBindingInactive,
			"this sign-in identity has been disabled for this installation; ask an administrator")
	}
	u, err := s.d.Users.GetUser(ctx, b.UserID)
	if err != nil {
		if domain.KindOf(err) == domain.KindNotFound {
			return domain.User{}, errNotInvited()
		}
		return domain.User{}, err
	}
	if ownerEmail != "" && u.Email == ownerEmail {
		return s.ensureOwner(ctx, &u, ownerEmail, "")
	}
	return s.activate(ctx, u.ID)
}

// viaEmail handles an identity the engine has not seen: the email must be
// verified and match the owner or an engine-owned user.
func (s *SignIn) viaEmail(ctx context.Context, id RegistryIdentity, ownerEmail string) (domain.User, error) {
	if !id.EmailVerified {
		return domain.User{}, domain.E(domain.KindForbidden, domain.CodeEmailNotVerified,
			"the identity registry has not verified your email address; verify it there and sign in again")
	}
	email, err := domain.NormalizeEmail(id.Email)
	if err != nil {
		return domain.User{}, domain.E(domain.KindForbidden, domain.CodeEmailNotVerified, "the identity registry did not provide a usable email address")
	}
	existing, gerr := s.d.Users.GetUserByEmail(ctx, email)
	found := gerr == nil
	if gerr != nil && domain.KindOf(gerr) != domain.KindNotFound {
		return domain.User{}, gerr
	}
	if email == ownerEmail && ownerEmail != "" {
		var u domain.User
		if found {
			if err := s.checkUnbound(ctx, existing.ID); err != nil {
				return domain.User{}, err
			}
			u, err = s.ensureOwner(ctx, &existing, ownerEmail, id.Name)
		} else {
			u, err = s.ensureOwner(ctx, nil, ownerEmail, id.Name)
		}
		if err != nil {
			return domain.User{}, err
		}
		return u, s.bind(ctx, id, u)
	}
	if !found {
		return domain.User{}, errNotInvited()
	}
	switch existing.Status {
	case domain.StatusInvited, domain.StatusActive:
	default:
		// Checked before binding so a refused person leaves nothing behind.
		var probe = existing
		return domain.User{}, probe.ActivateBySignIn(s.now())
	}
	if err := s.checkUnbound(ctx, existing.ID); err != nil {
		return domain.User{}, err
	}
	if err := s.bind(ctx, id, existing); err != nil {
		return domain.User{}, err
	}
	return s.activate(ctx, existing.ID)
}

func errNotInvited() error {
	return domain.E(domain.KindForbidden, domain.CodeNotInvited,
		"there is no invitation for this email address on this installation; ask an administrator to invite you")
}

// checkUnbound refuses a user already bound to another identity: a returning
// user signs in only through that binding, never by email again.
func (s *SignIn) checkUnbound(ctx context.Context, userID string) error {
	_, err := s.d.Bindings.GetBindingByUser(ctx, userID)
	switch {
	case err == nil:
		return domain.E(domain.KindForbidden, domain.CodeIdentityMismatch,
			"this account is linked to a different sign-in identity; sign in with that one")
	case domain.KindOf(err) == domain.KindNotFound:
		return nil
	default:
		return err
	}
}

func (s *SignIn) bind(ctx context.Context, id RegistryIdentity, u domain.User) error {
	err := s.d.Bindings.CreateBinding(ctx, ports.IdentityBinding{
		Issuer: id.Issuer, Subject: id.Subject, UserID: u.ID, Email: u.Email, Active: true, CreatedAt: s.now(),
	})
	if err != nil {
		// A concurrent first sign-in of the same identity may have won.
		if b, gerr := s.d.Bindings.GetBinding(ctx, id.Issuer, id.Subject); gerr == nil && b.UserID == u.ID && b.Active {
			return nil
		}
		if domain.KindOf(err) == domain.KindConflict {
			return domain.E(domain.KindForbidden, domain.CodeIdentityMismatch,
				"this account is linked to a different sign-in identity; sign in with that one")
		}
		return err
	}
	s.audit(ctx, u.ID, "identity.bound", map[string]any{"issuer": id.Issuer, "subject": id.Subject})
	return nil
}

// activate records a verified sign-in: invited becomes active; suspended and
// archived users are refused by the domain rule.
func (s *SignIn) activate(ctx context.Context, userID string) (domain.User, error) {
	defer s.invalidateAuth()
	u, changed, err := identity.ActivateUser(ctx, s.d.Users, userID, s.now())
	if err != nil {
		return domain.User{}, err
	}
	if changed {
		s.audit(ctx, u.ID, "user.activated", map[string]any{"email": u.Email, "via": "registry"})
	}
	return u, nil
}

// ensureOwner makes the license owner an active admin: created on first
// sign-in, otherwise promoted and (re)activated. The registry's word on who
// owns the license outranks local status, except archival, which is final.
func (s *SignIn) ensureOwner(ctx context.Context, existing *domain.User, email, name string) (domain.User, error) {
	defer s.invalidateAuth()
	now := s.now()
	var u domain.User
	if existing == nil {
		owner, err := domain.NewInvitedUser(s.d.NewID(), email, name, domain.RoleAdmin, now)
		if err != nil {
			return domain.User{}, err
		}
		if err := owner.ActivateBySignIn(now); err != nil {
			return domain.User{}, err
		}
		if err := s.d.Users.CreateUser(ctx, owner); err != nil {
			return domain.User{}, err
		}
		s.audit(ctx, owner.ID, "owner.created", map[string]any{"email": owner.Email, "via": "registry"})
		u = owner
	} else {
		var err error
		u, err = s.d.Users.UpdateUser(ctx, existing.ID, func(u *domain.User, _ []string) error {
			if u.Status == domain.StatusSuspended {
				if err := u.ChangeStatusByAdmin(domain.StatusActive, now); err != nil {
					return err
				}
			}
			if err := u.ChangeRole(domain.RoleAdmin, now); err != nil {
				return err
			}
			return u.ActivateBySignIn(now)
		})
		if err != nil {
			return domain.User{}, err
		}
	}
	if s.d.Setting != nil {
		if _, ok, err := s.d.Setting.GetSetting(ctx, identity.OwnerSettingKey); err == nil && !ok {
			if err := s.d.Setting.PutSetting(ctx, identity.OwnerSettingKey, u.ID, u.ID, now); err != nil {
				s.d.Log.Warn("record owner", "err", err)
			}
		}
	}
	return u, nil
}

// invalidateAuth drops the cached authentications of the identity use cases
// that start SignIn's sessions after SignIn has changed users through
// ports.Users directly (a role or status change must apply on the next request).
func (s *SignIn) invalidateAuth() {
	s.d.Invalidate()
}

func (s *SignIn) audit(ctx context.Context, userID, action string, details map[string]any) {
	if s.d.Audit == nil {
		return
	}
	e := ports.AuditEntry{ID: s.d.NewID(), At: s.now(), ActorKind: domain.PrincipalUser, ActorID: userID, Action: action, Target: userID, Details: details}
	// The action has committed: its line is written even if ctx ends now.
	ctx, cancel := auditctx.Detached(ctx)
	defer cancel()
	if err := s.d.Audit.RecordAudit(ctx, e); err != nil {
		s.d.Log.Error("audit record failed", "action", action, "err", err)
	}
}
