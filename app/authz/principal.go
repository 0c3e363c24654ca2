package authz

import (
	"context"

	"github.com/threadengine/engine/domain"
)

type principalKey struct{}

// WithPrincipal returns ctx carrying the authenticated caller.
func WithPrincipal(ctx context.Context, p domain.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the caller stored by WithPrincipal.
func PrincipalFrom(ctx context.Context) (domain.Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(domain.Principal)
	return p, ok && p.ID != ""
}

// RequirePrincipal returns the caller or an unauthenticated error.
func RequirePrincipal(ctx context.Context) (domain.Principal, error) {
	p, ok := PrincipalFrom(ctx)
	if !ok {
		return domain.Principal{}, domain.ErrUnauthenticated
	}
	return p, nil
}

// Require returns the caller if it holds perm.
func Require(ctx context.Context, perm domain.Permission) (domain.Principal, error) {
	p, err := RequirePrincipal(ctx)
	if err != nil {
		return p, err
	}
	return p, p.Require(perm)
}
