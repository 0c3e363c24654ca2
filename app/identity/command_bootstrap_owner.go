package identity

// The BootstrapOwner command: creates the installation's owner and first key (threadengine bootstrap-owner).

import (
	"context"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// BootstrapOwnerHandler creates the installation's owner and first key (threadengine bootstrap-owner); one of the Commands.
type BootstrapOwnerHandler struct {
	users    ports.Users
	keys     keyMinter
	settings ports.Settings // nil: the owner is not recorded
	audit    auditTrail
	clock    ports.Clock
	newID    func() string
}

// NewBootstrapOwnerHandler builds BootstrapOwner.
func NewBootstrapOwnerHandler(users ports.Users, keys keyMinter, settings ports.Settings, audit auditTrail, clock ports.Clock, newID func() string) BootstrapOwnerHandler {
	return BootstrapOwnerHandler{users: users, keys: keys, settings: settings, audit: audit, clock: clock, newID: newID}
}

// Handle creates the first administrator from the command line: a new
// active admin, or an existing invited/suspended user promoted and activated.
// It also creates a personal API key and returns its plaintext once. It
// refuses when any active admin exists, so it cannot be used to take over an
// installation.
func (h BootstrapOwnerHandler) Handle(ctx context.Context, email, fullName string) (domain.User, string, error) {
	users, err := h.users.ListUsers(ctx)
	if err != nil {
		return domain.User{}, "", err
	}
	for _, u := range users {
		if u.IsActiveAdmin() {
			return domain.User{}, "", errOwnerExists
		}
	}
	now := now(h.clock)
	owner, err := domain.NewInvitedUser(h.newID(), email, fullName, domain.RoleAdmin, now)
	if err != nil {
		return domain.User{}, "", err
	}
	existing, err := h.users.GetUserByEmail(ctx, owner.Email)
	switch {
	case err == nil:
		owner, err = h.users.UpdateUser(ctx, existing.ID, func(u *domain.User, _ []string) error {
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
		if err := h.users.CreateUser(ctx, owner); err != nil {
			return domain.User{}, "", err
		}
	default:
		return domain.User{}, "", err
	}
	secret, k, err := h.keys.newKey(ctx, "bootstrap owner key", owner.ID, "", owner.ID, nil, now)
	if err != nil {
		return domain.User{}, "", err
	}
	if h.settings != nil {
		if err := h.settings.PutSetting(ctx, OwnerSettingKey, owner.ID, owner.ID, now); err != nil {
			return domain.User{}, "", err
		}
	}
	actor := domain.Principal{Kind: domain.PrincipalUser, ID: owner.ID}
	h.audit.record(ctx, actor, "owner.bootstrapped", owner.ID, map[string]any{"email": owner.Email, "api_key_id": k.ID})
	return owner, secret, nil
}
