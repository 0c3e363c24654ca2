// Package app holds threadengine's use cases, one package per area:
// identity, signin, threads, delivery, readmodel, ops (and authz, the
// caller in a context). The contract use cases (contracts.go) are still
// here; they and their tests call the forwarders below.
package app

import (
	"context"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
)

// WithPrincipal is authz.WithPrincipal.
func WithPrincipal(ctx context.Context, p domain.Principal) context.Context {
	return authz.WithPrincipal(ctx, p)
}

// PrincipalFrom is authz.PrincipalFrom.
func PrincipalFrom(ctx context.Context) (domain.Principal, bool) { return authz.PrincipalFrom(ctx) }

// Require is authz.Require.
func Require(ctx context.Context, perm domain.Permission) (domain.Principal, error) {
	return authz.Require(ctx, perm)
}
