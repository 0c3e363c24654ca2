package identity

// What the identity commands on users share: the patch of UpdateUser, the
// sign-in activation rule (ActivateBySignIn and signin.SignIn) and
// BootstrapOwner's refusal. Changes go through ports.Users.UpdateUser, under the user's lock.

import (
	"context"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// UserPatch changes a user; nil fields stay as they are.
type UserPatch struct {
	FullName *string
	Role     *string
	Status   *string
}

// ActivateUser applies the sign-in activation rule under the user's row lock
// and reports whether the status changed (for the audit entry).
func ActivateUser(ctx context.Context, users ports.Users, userID string, now time.Time) (domain.User, bool, error) {
	var before domain.Status
	u, err := users.UpdateUser(ctx, userID, func(u *domain.User, _ []string) error {
		before = u.Status
		return u.ActivateBySignIn(now)
	})
	return u, err == nil && before != u.Status, err
}

// errOwnerExists is returned by BootstrapOwner once an installation has an admin.
var errOwnerExists = domain.NewBase(domain.KindConflict, domain.CodeInvalidStatusTransition,
	"an active administrator already exists; bootstrap-owner only sets up a fresh installation (use an admin key to invite users)")
