package identity

// The ListAPIKeys query: lists API keys (GET /v1/api-keys).

import (
	"context"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// ListAPIKeysHandler lists API keys (GET /v1/api-keys); one of the Queries.
type ListAPIKeysHandler struct{ keys ports.APIKeys }

// NewListAPIKeysHandler builds ListAPIKeys.
func NewListAPIKeysHandler(keys ports.APIKeys) ListAPIKeysHandler {
	return ListAPIKeysHandler{keys: keys}
}

// Handle returns the caller's own keys, or every key for callers with
// keys.manage. Revoked keys are included (with RevokedAt set).
func (h ListAPIKeysHandler) Handle(ctx context.Context) ([]domain.APIKey, error) {
	actor, err := authz.RequirePrincipal(ctx)
	if err != nil {
		return nil, err
	}
	f := ports.APIKeyFilter{IncludeRevoked: true}
	if !actor.Can(domain.PermAllKeys) {
		if err := actor.Require(domain.PermOwnKeys); err != nil {
			return nil, err
		}
		f.UserID = actor.ID
	}
	return h.keys.ListAPIKeys(ctx, f)
}
