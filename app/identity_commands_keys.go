package app

// The inputs of the API key commands (app/command_create_api_key.go,
// app/command_revoke_api_key.go) and the key minting they share.

import (
	"context"
	"time"

	"github.com/threadengine/engine/domain"
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

func (s *Identity) newKey(ctx context.Context, name, userID, saID, createdBy string, expiresAt *time.Time, now time.Time) (string, domain.APIKey, error) {
	secret, err := domain.NewAPIKeySecret(s.d.Random)
	if err != nil {
		return "", domain.APIKey{}, err
	}
	k, err := domain.NewAPIKey(s.d.NewID(), name, secret, userID, saID, createdBy, expiresAt, now)
	if err != nil {
		return "", domain.APIKey{}, err
	}
	if err := s.d.APIKeys.CreateAPIKey(ctx, k); err != nil {
		return "", domain.APIKey{}, err
	}
	return secret, k, nil
}

// --- sessions ---
