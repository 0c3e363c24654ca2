package identity

// The InviteUser command: invites a user on behalf of a client (POST /v1/users).

import (
	"context"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// InviteRequest is an invitation as a client sends it: the fields a client
// may leave out are pointers, so their absence is reported after the
// permission check.
type InviteRequest struct {
	Email    *string
	FullName string
	Role     *string
}

// InviteUserHandler invites a user on behalf of a client (POST /v1/users); one of the Commands.
type InviteUserHandler struct {
	users ports.Users
	audit auditTrail
	clock ports.Clock
	newID func() string
}

// NewInviteUserHandler builds InviteUser.
func NewInviteUserHandler(users ports.Users, audit auditTrail, clock ports.Clock, newID func() string) InviteUserHandler {
	return InviteUserHandler{users: users, audit: audit, clock: clock, newID: newID}
}

// Handle creates an invited user (administrators only). It checks the caller
// may manage users before it looks at the request, so a viewer learns nothing
// from validation errors. An identical repeat (same email, name and role of a
// still-invited user) returns the existing invitation with created=false; any
// other use of the email is a conflict, including archived users, who cannot
// be re-invited.
func (h InviteUserHandler) Handle(ctx context.Context, req InviteRequest) (domain.User, bool, error) {
	actor, err := authz.Require(ctx, domain.PermUsersManage)
	if err != nil {
		return domain.User{}, false, err
	}
	if req.Email == nil {
		return domain.User{}, false, domain.Invalid("email", "email is required")
	}
	if req.Role == nil {
		return domain.User{}, false, domain.Invalid("role", "role is required")
	}
	role, err := domain.ParseRole(*req.Role)
	if err != nil {
		return domain.User{}, false, err
	}
	now := now(h.clock)
	u, err := domain.NewInvitedUser(h.newID(), *req.Email, req.FullName, role, now)
	if err != nil {
		return domain.User{}, false, err
	}
	if existing, ok, err := h.sameInvitation(ctx, u); err != nil || ok {
		return existing, false, err
	}
	if err := h.users.CreateUser(ctx, u); err != nil {
		if domain.CodeOf(err) == domain.CodeEmailTaken {
			// A concurrent identical invite may have won the race.
			if existing, ok, err2 := h.sameInvitation(ctx, u); err2 == nil && ok {
				return existing, false, nil
			}
		}
		return domain.User{}, false, err
	}
	h.audit.record(ctx, actor, "user.invited", u.ID, map[string]any{"email": u.Email, "role": string(u.Role)})
	return u, true, nil
}

func errEmailTaken() error {
	return domain.E(domain.KindConflict, domain.CodeEmailTaken, "a user with this email already exists").WithField("email")
}

// sameInvitation reports whether u repeats an existing invitation exactly. It
// returns an email_taken conflict when the email is used differently.
func (h InviteUserHandler) sameInvitation(ctx context.Context, u domain.User) (domain.User, bool, error) {
	existing, err := h.users.GetUserByEmail(ctx, u.Email)
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
