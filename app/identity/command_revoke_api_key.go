package identity

// The RevokeAPIKey command: revokes an API key (DELETE /v1/api-keys/:id).

import (
	"context"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// RevokeAPIKeyHandler revokes an API key (DELETE /v1/api-keys/:id); one of the Commands.
type RevokeAPIKeyHandler struct {
	keys  ports.APIKeys
	audit auditTrail
	clock ports.Clock
}

// NewRevokeAPIKeyHandler builds RevokeAPIKey.
func NewRevokeAPIKeyHandler(keys ports.APIKeys, audit auditTrail, clock ports.Clock) RevokeAPIKeyHandler {
	return RevokeAPIKeyHandler{keys: keys, audit: audit, clock: clock}
}

// Handle revokes a key and every session created from it. Callers
// without keys.manage may revoke only their own personal keys; other keys are
// reported as not found so their existence does not leak.
func (h RevokeAPIKeyHandler) Handle(ctx context.Context, id string) (domain.APIKey, error) {
	actor, err := authz.RequirePrincipal(ctx)
	if err != nil {
		return domain.APIKey{}, err
	}
	if err := domain.CheckID("API key", id); err != nil {
		return domain.APIKey{}, err
	}
	k, err := h.keys.GetAPIKey(ctx, id)
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
	k, err = h.keys.RevokeAPIKey(ctx, id, now(h.clock))
	if err != nil {
		return domain.APIKey{}, err
	}
	h.audit.record(ctx, actor, "api_key.revoked", k.ID, map[string]any{"name": k.Name})
	return k, nil
}
