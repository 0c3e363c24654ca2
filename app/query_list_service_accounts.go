package app

// The ListServiceAccounts query: lists service accounts (GET /v1/api-keys, GET /v1/service-accounts).

import (
	"context"

	"github.com/threadengine/engine/domain"
)

// ListServiceAccountsHandler lists service accounts (GET /v1/api-keys, GET /v1/service-accounts); one of Identity's Queries.
type ListServiceAccountsHandler struct{ s *Identity }

// Handle returns every service account, sorted by name, for
// callers who manage all keys (the API key list shows each key's account).
func (h ListServiceAccountsHandler) Handle(ctx context.Context) ([]domain.ServiceAccount, error) {
	s := h.s
	if _, err := Require(ctx, domain.PermAllKeys); err != nil {
		return nil, err
	}
	return s.d.ServiceAccounts.ListServiceAccounts(ctx)
}
