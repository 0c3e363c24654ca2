package identity

import (
	"context"

	"github.com/threadengine/engine/domain"
)

// Authenticator turns a credential into the current principal. Every transport
// (REST, GraphQL, WebSocket, OTLP, MCP) authenticates through it, so the rules
// (revocation, expiry, user status, fresh roles) live in one place.
type Authenticator interface {
	// AuthenticateAPIKey checks a "td_…" key: it must exist, be unrevoked and
	// unexpired, and its owner must be active.
	AuthenticateAPIKey(ctx context.Context, secret string) (domain.Principal, error)
	// AuthenticateSession checks a browser session token (from the cookie)
	// with domain.CheckSession, re-reading user, roles and source key.
	AuthenticateSession(ctx context.Context, token string) (domain.Principal, error)
}

// Authenticator is the Authenticator the transports use: the two
// authentication queries, with their cache and refusal counting.
func (q Queries) Authenticator() Authenticator {
	return queryAuthenticator{apiKey: q.AuthenticateAPIKey, session: q.AuthenticateSession}
}

// queryAuthenticator adapts the authentication query handlers to the
// Authenticator interface the transports depend on.
type queryAuthenticator struct {
	apiKey  AuthenticateAPIKeyHandler
	session AuthenticateSessionHandler
}

func (a queryAuthenticator) AuthenticateAPIKey(ctx context.Context, secret string) (domain.Principal, error) {
	return a.apiKey.Handle(ctx, secret)
}

func (a queryAuthenticator) AuthenticateSession(ctx context.Context, token string) (domain.Principal, error) {
	return a.session.Handle(ctx, token)
}
