package identity

// What the identity queries share: the refusal of a bad credential, the
// counting of refusals, and the results of the list queries.

import (
	"context"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

var errBadCredential = domain.NewBase(domain.KindUnauthenticated, domain.CodeUnauthenticated, "the credential is not valid")

// refusals counts refused credentials.
type refusals struct{ metrics ports.AuthMetrics }

// count counts a refused credential; failures to check one (the database is
// down) are not refusals.
func (r refusals) count(method string, err error) {
	if err == nil {
		return
	}
	if de := domain.AsError(err); de.Kind != domain.KindInternal && de.Kind != domain.KindUnavailable {
		r.metrics.AuthFailed(method, string(de.Code))
	}
}

// UserList is every user, sorted by email, and whether the caller may
// manage them (so a UI shows or hides its controls).
type UserList struct {
	Users     []domain.User
	CanManage bool
}

// CanManageAllKeys reports whether the caller may see and manage every key.
func CanManageAllKeys(ctx context.Context) bool {
	p, ok := authz.PrincipalFrom(ctx)
	return ok && p.Can(domain.PermAllKeys)
}
