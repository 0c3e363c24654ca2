package identity

// The EraseUser command: removes an archived user's personal data
// (DELETE /v1/users/:id).

import (
	"context"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// EraseUserHandler erases an archived user's personal data; one of the
// Commands.
type EraseUserHandler struct {
	users ports.Users
	audit auditTrail
	clock ports.Clock
}

// NewEraseUserHandler builds EraseUser.
func NewEraseUserHandler(users ports.Users, audit auditTrail, clock ports.Clock) EraseUserHandler {
	return EraseUserHandler{users: users, audit: audit, clock: clock}
}

// Handle erases user id (administrators only): its email and name go from
// the users row (domain.User.Erase) and, in the same transaction, from its
// sessions, its sign-in binding and the audit log (the store applies
// domain.EffectsOf). The user stays, archived, under its id, which threads,
// steps and audit entries name, so the record and its hash chain are
// untouched. Erasing an erased user again succeeds and changes nothing; the
// erasure is audited without the data it removed.
func (h EraseUserHandler) Handle(ctx context.Context, id string) (domain.User, error) {
	actor, err := authz.Require(ctx, domain.PermUsersManage)
	if err != nil {
		return domain.User{}, err
	}
	if err := domain.CheckID("user", id); err != nil {
		return domain.User{}, err
	}
	var already bool
	now := now(h.clock)
	u, err := h.users.UpdateUser(ctx, id, func(u *domain.User, _ []string) error {
		already = u.Erased()
		return u.Erase(now)
	})
	if err != nil {
		return domain.User{}, err
	}
	if !already {
		h.audit.record(ctx, actor, "user.erased", u.ID, nil)
	}
	return u, nil
}
