package app

// The ListAPIKeys query: lists API keys (GET /v1/api-keys).

import (
	"context"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// ListAPIKeysHandler lists API keys (GET /v1/api-keys); one of Identity's Queries.
type ListAPIKeysHandler struct{ s *Identity }

// Handle returns the caller's own keys, or every key for callers with
// keys.manage. Revoked keys are included (with RevokedAt set).
func (h ListAPIKeysHandler) Handle(ctx context.Context) ([]domain.APIKey, error) {
	s := h.s
	actor, err := RequirePrincipal(ctx)
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
	return s.d.APIKeys.ListAPIKeys(ctx, f)
}
