package app

// The ListUsers query: lists users (GET /v1/users).

import (
	"context"
	"sort"

	"github.com/threadengine/engine/domain"
)

// ListUsersHandler lists users (GET /v1/users); one of Identity's Queries.
type ListUsersHandler struct{ s *Identity }

// Handle returns every user sorted by email (humans with users.read).
func (h ListUsersHandler) Handle(ctx context.Context) (UserList, error) {
	s := h.s
	p, err := Require(ctx, domain.PermUsersRead)
	if err != nil {
		return UserList{}, err
	}
	us, err := s.d.Users.ListUsers(ctx)
	if err != nil {
		return UserList{}, err
	}
	sort.Slice(us, func(i, j int) bool { return us[i].Email < us[j].Email })
	return UserList{Users: us, CanManage: p.Can(domain.PermUsersManage)}, nil
}
