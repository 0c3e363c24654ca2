package identity

// The ListUsers query: lists users (GET /v1/users).

import (
	"context"
	"sort"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// ListUsersHandler lists users (GET /v1/users); one of the Queries.
type ListUsersHandler struct{ users ports.Users }

// NewListUsersHandler builds ListUsers.
func NewListUsersHandler(users ports.Users) ListUsersHandler { return ListUsersHandler{users: users} }

// Handle returns every user sorted by email (humans with users.read).
func (h ListUsersHandler) Handle(ctx context.Context) (UserList, error) {
	p, err := authz.Require(ctx, domain.PermUsersRead)
	if err != nil {
		return UserList{}, err
	}
	us, err := h.users.ListUsers(ctx)
	if err != nil {
		return UserList{}, err
	}
	sort.Slice(us, func(i, j int) bool { return us[i].Email < us[j].Email })
	return UserList{Users: us, CanManage: p.Can(domain.PermUsersManage)}, nil
}
