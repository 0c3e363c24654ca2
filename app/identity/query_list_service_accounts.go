package identity

// The ListServiceAccounts query: lists service accounts (GET /v1/api-keys, GET /v1/service-accounts).

import (
	"context"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// ListServiceAccountsHandler lists service accounts (GET /v1/api-keys, GET /v1/service-accounts); one of the Queries.
type ListServiceAccountsHandler struct{ accounts ports.ServiceAccounts }

// NewListServiceAccountsHandler builds ListServiceAccounts.
func NewListServiceAccountsHandler(accounts ports.ServiceAccounts) ListServiceAccountsHandler {
	return ListServiceAccountsHandler{accounts: accounts}
}

// Handle returns every service account, sorted by name, for
// callers who manage all keys (the API key list shows each key's account).
func (h ListServiceAccountsHandler) Handle(ctx context.Context) ([]domain.ServiceAccount, error) {
	if _, err := authz.Require(ctx, domain.PermAllKeys); err != nil {
		return nil, err
	}
	return h.accounts.ListServiceAccounts(ctx)
}
