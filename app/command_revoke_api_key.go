package app

// The RevokeAPIKey command: revokes an API key (DELETE /v1/api-keys/:id).

import (
	"context"

	"github.com/threadengine/engine/domain"
)

// RevokeAPIKeyHandler revokes an API key (DELETE /v1/api-keys/:id); one of Identity's Commands.
type RevokeAPIKeyHandler struct{ s *Identity }

// Handle revokes a key and every session created from it. Callers
// without keys.manage may revoke only their own personal keys; other keys are
// reported as not found so their existence does not leak.
func (h RevokeAPIKeyHandler) Handle(ctx context.Context, id string) (domain.APIKey, error) {
	s := h.s
	actor, err := RequirePrincipal(ctx)
	if err != nil {
		return domain.APIKey{}, err
	}
	if err := domain.CheckID("API key", id); err != nil {
		return domain.APIKey{}, err
	}
	k, err := s.d.APIKeys.GetAPIKey(ctx, id)
	if err != nil {
		if domain.KindOf(err) == domain.KindNotFound {
			return domain.APIKey{}, domain.NotFound("API key")
		}
		return domain.APIKey{}, err
	}
	if !actor.Can(domain.PermAllKeys) {
		if err := actor.Require(domain.PermOwnKeys); err != nil {
			return domain.APIKey{}, err
		}
		if k.UserID != actor.ID {
			return domain.APIKey{}, domain.NotFound("API key")
		}
	}
	k, err = s.d.APIKeys.RevokeAPIKey(ctx, id, s.now())
	if err != nil {
		return domain.APIKey{}, err
	}
	s.audit(ctx, actor, "api_key.revoked", k.ID, map[string]any{"name": k.Name})
	return k, nil
}
