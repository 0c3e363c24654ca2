package ports

import (
	"context"
	"time"
)

// LicenseInfo is what the identity registry says about the configured
// license key.
type LicenseInfo struct {
	Account    string
	OwnerEmail string
	Products   []string
	// ManagedIdentity reports whether browser sign-in through the registry
	// (OIDC) is enabled for the account.
	ManagedIdentity bool
	Suspended       bool
	CheckedAt       time.Time
}

// License asks the registry about the license. An unknown or revoked key is
// a *domain.Error (KindForbidden); an unreachable registry is KindUnavailable.
type License interface {
	Check(ctx context.Context) (LicenseInfo, error)
}
