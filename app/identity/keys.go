package identity

// The inputs of the API key commands (command_create_api_key.go,
// command_revoke_api_key.go) and the key minting they share with
// BootstrapOwner.

import (
	"context"
	"io"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// NewServiceAccountInput asks CreateAPIKey to create a service account.
type NewServiceAccountInput struct {
	Name  string
	Role  string
	Scope string // company (default) or party: see domain.ReadScope
}

// CreateAPIKeyInput describes a key to create. Without ServiceAccountID or
// CreateServiceAccount the key is personal (the caller's own).
type CreateAPIKeyInput struct {
	Name                 string
	ExpiresAt            *time.Time
	ExpiresInDays        *int
	ServiceAccountID     string
	CreateServiceAccount *NewServiceAccountInput
}

// keyMinter creates API keys (CreateAPIKey, BootstrapOwner).
type keyMinter struct {
	keys   ports.APIKeys
	random io.Reader
	newID  func() string
}

func (m keyMinter) newKey(ctx context.Context, name, userID, saID, createdBy string, expiresAt *time.Time, now time.Time) (string, domain.APIKey, error) {
	secret, err := domain.NewAPIKeySecret(m.random)
	if err != nil {
		return "", domain.APIKey{}, err
	}
	k, err := domain.NewAPIKey(m.newID(), name, secret, userID, saID, createdBy, expiresAt, now)
	if err != nil {
		return "", domain.APIKey{}, err
	}
	if err := m.keys.CreateAPIKey(ctx, k); err != nil {
		return "", domain.APIKey{}, err
	}
	return secret, k, nil
}
