package identity

// The CreateAPIKey command: creates an API key, optionally with a new service account (POST /v1/api-keys).

import (
	"context"
	"strings"
	"time"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// CreateAPIKeyHandler creates an API key, optionally with a new service account (POST /v1/api-keys); one of the Commands.
type CreateAPIKeyHandler struct {
	accounts ports.ServiceAccounts
	keys     keyMinter
	audit    auditTrail
	clock    ports.Clock
	newID    func() string
}

// NewCreateAPIKeyHandler builds CreateAPIKey.
func NewCreateAPIKeyHandler(accounts ports.ServiceAccounts, keys keyMinter, audit auditTrail, clock ports.Clock, newID func() string) CreateAPIKeyHandler {
	return CreateAPIKeyHandler{accounts: accounts, keys: keys, audit: audit, clock: clock, newID: newID}
}

// Handle creates a key and returns its plaintext, which is never
// available again. Personal keys need keys.own; service-account keys (and
// creating service accounts) need keys.manage.
func (h CreateAPIKeyHandler) Handle(ctx context.Context, in CreateAPIKeyInput) (string, domain.APIKey, error) {
	actor, err := authz.RequirePrincipal(ctx)
	if err != nil {
		return "", domain.APIKey{}, err
	}
	now := now(h.clock)
	var expiresAt *time.Time
	switch {
	case in.ExpiresAt != nil && in.ExpiresInDays != nil:
		return "", domain.APIKey{}, domain.Invalid("expires_at", "give expires_at or expires_in_days, not both")
	case in.ExpiresInDays != nil:
		d := *in.ExpiresInDays
		if d < 1 || d > maxKeyLifetimeDays {
			return "", domain.APIKey{}, domain.Invalid("expires_in_days", "expires_in_days must be between 1 and %d", maxKeyLifetimeDays)
		}
		t := now.AddDate(0, 0, d)
		expiresAt = &t
	case in.ExpiresAt != nil:
		t := in.ExpiresAt.UTC()
		expiresAt = &t
	}
	if in.ServiceAccountID != "" && in.CreateServiceAccount != nil {
		return "", domain.APIKey{}, domain.Invalid("service_account_id", "give service_account_id or create_service_account, not both")
	}
	if in.ServiceAccountID == "" && in.CreateServiceAccount == nil {
		if err := actor.Require(domain.PermOwnKeys); err != nil {
			return "", domain.APIKey{}, err
		}
		secret, k, err := h.keys.newKey(ctx, in.Name, actor.ID, "", actor.ID, expiresAt, now)
		if err != nil {
			return "", domain.APIKey{}, err
		}
		h.audit.record(ctx, actor, "api_key.created", k.ID, map[string]any{"name": k.Name, "kind": "personal"})
		return secret, k, nil
	}
	if err := actor.Require(domain.PermAllKeys); err != nil {
		return "", domain.APIKey{}, err
	}
	saID := in.ServiceAccountID
	if in.CreateServiceAccount != nil {
		role := domain.Role(in.CreateServiceAccount.Role)
		if role == "" {
			role = domain.RoleMember
		}
		name := in.CreateServiceAccount.Name
		if strings.TrimSpace(name) == "" {
			name = in.Name
		}
		sa, err := domain.NewServiceAccount(h.newID(), name, role, domain.ReadScope(in.CreateServiceAccount.Scope), actor.ID, now)
		if err != nil {
			if de := domain.AsError(err); de.Field != "" {
				err = de.WithField("create_service_account." + de.Field)
			}
			return "", domain.APIKey{}, err
		}
		// Validate the key before creating the account, so a bad key name
		// does not leave an orphan service account behind.
		if _, err := domain.NewAPIKey("x", in.Name, domain.APIKeyPrefix, "", sa.ID, actor.ID, expiresAt, now); err != nil {
			return "", domain.APIKey{}, err
		}
		if err := h.accounts.CreateServiceAccount(ctx, sa); err != nil {
			return "", domain.APIKey{}, err
		}
		h.audit.record(ctx, actor, "service_account.created", sa.ID, map[string]any{"name": sa.Name, "role": string(sa.Role), "scope": string(sa.Scope)})
		saID = sa.ID
	} else {
		sa, err := h.accounts.GetServiceAccount(ctx, saID)
		if err != nil {
			if domain.KindOf(err) == domain.KindNotFound {
				return "", domain.APIKey{}, domain.NotFound("service account")
			}
			return "", domain.APIKey{}, err
		}
		if !sa.Active {
			return "", domain.APIKey{}, domain.E(domain.KindConflict, domain.CodeUserNotActive, "the service account is not active")
		}
	}
	secret, k, err := h.keys.newKey(ctx, in.Name, "", saID, actor.ID, expiresAt, now)
	if err != nil {
		return "", domain.APIKey{}, err
	}
	h.audit.record(ctx, actor, "api_key.created", k.ID, map[string]any{"name": k.Name, "kind": "service_account", "service_account_id": saID})
	return secret, k, nil
}
