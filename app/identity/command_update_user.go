package identity

// The UpdateUser command: changes a user (PATCH /v1/users/:id).

import (
	"context"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// UpdateUserHandler changes a user (PATCH /v1/users/:id); one of the Commands.
type UpdateUserHandler struct {
	users ports.Users
	audit auditTrail
	clock ports.Clock
}

// NewUpdateUserHandler builds UpdateUser.
func NewUpdateUserHandler(users ports.Users, audit auditTrail, clock ports.Clock) UpdateUserHandler {
	return UpdateUserHandler{users: users, audit: audit, clock: clock}
}

// Handle renames, changes the role of, suspends, reactivates or archives a
// user (administrators only). The last-active-admin invariant is checked
// inside the store's transaction against the locked set of active admins.
func (h UpdateUserHandler) Handle(ctx context.Context, id string, patch UserPatch) (domain.User, error) {
	actor, err := authz.Require(ctx, domain.PermUsersManage)
	if err != nil {
		return domain.User{}, err
	}
	if patch.FullName == nil && patch.Role == nil && patch.Status == nil {
		return domain.User{}, domain.Invalid("", "give at least one of full_name, role, status")
	}
	if err := domain.CheckID("user", id); err != nil {
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
	now := now(h.clock)
	after, err := h.users.UpdateUser(ctx, id, func(u *domain.User, activeAdminIDs []string) error {
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
		h.audit.record(ctx, actor, "user.updated", after.ID, details)
	}
	return after, nil
}
