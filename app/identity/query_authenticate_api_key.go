package identity

// The AuthenticateAPIKey query: who is calling with a "td_…" key (every
// request that carries one: REST, GraphQL, WebSocket, OTLP, MCP).

import (
	"context"
	"log/slog"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// AuthenticateAPIKeyHandler checks an API key; one of the Queries (and half
// of Queries.Authenticator).
type AuthenticateAPIKeyHandler struct {
	keys     ports.APIKeys
	users    ports.Users
	accounts ports.ServiceAccounts
	cache    *authCache // nil: disabled
	refused  refusals
	clock    ports.Clock
	log      *slog.Logger
}

// NewAuthenticateAPIKeyHandler builds AuthenticateAPIKey.
func NewAuthenticateAPIKeyHandler(keys ports.APIKeys, users ports.Users, accounts ports.ServiceAccounts, cache *authCache,
	refused refusals, clock ports.Clock, log *slog.Logger) AuthenticateAPIKeyHandler {
	return AuthenticateAPIKeyHandler{keys: keys, users: users, accounts: accounts, cache: cache, refused: refused, clock: clock, log: log}
}

// Handle checks a "td_…" key: it must exist, be unrevoked and unexpired, and
// its owner (user or service account) must be active. Successful checks are
// cached (authCache); every hit re-runs the checks against the current clock.
func (h AuthenticateAPIKeyHandler) Handle(ctx context.Context, secret string) (domain.Principal, error) {
	p, err := h.check(ctx, secret)
	h.refused.count("api_key", err)
	return p, err
}

// check is Handle without the counting of refusals.
func (h AuthenticateAPIKeyHandler) check(ctx context.Context, secret string) (domain.Principal, error) {
	if !domain.LooksLikeAPIKey(secret) {
		return domain.Principal{}, errBadCredential
	}
	hash := domain.HashSecret(secret)
	e := h.cache.key(hash)
	if e == nil {
		gen := h.cache.generation()
		k, err := h.keys.GetAPIKeyByHash(ctx, hash)
		if err != nil {
			return domain.Principal{}, notFoundAs(err, errBadCredential)
		}
		if err := k.CheckUsable(now(h.clock)); err != nil {
			return domain.Principal{}, err
		}
		subj, kind, err := h.keySubject(ctx, k)
		if err != nil {
			return domain.Principal{}, err
		}
		if err := domain.CheckPrincipalActive(kind, subj); err != nil {
			return domain.Principal{}, err
		}
		e = h.cache.putKey(hash, gen, k, subj, kind)
		if e == nil { // cache disabled
			e = &keyEntry{key: k, subj: subj, kind: kind}
			if k.LastUsedAt != nil {
				e.lastUsed.Store(k.LastUsedAt.UnixNano())
			}
		}
	}
	k, subj := e.key, e.subj
	// Checked again on a cache hit: expiry is against the current clock.
	now := now(h.clock)
	if err := k.CheckUsable(now); err != nil {
		return domain.Principal{}, err
	}
	if err := domain.CheckPrincipalActive(e.kind, subj); err != nil {
		return domain.Principal{}, err
	}
	// last_used_at is informational: skip the write (which on SQLite takes
	// the database write lock) while the stored value is recent. The
	// compare-and-swap lets one of several concurrent hits do the write.
	last := e.lastUsed.Load()
	if (last == 0 || now.Sub(time.Unix(0, last)) >= touchInterval) && e.lastUsed.CompareAndSwap(last, now.UnixNano()) {
		if err := h.keys.TouchAPIKey(ctx, k.ID, now); err != nil {
			h.log.Debug("touch api key", "key_id", k.ID, "err", err)
		}
	}
	p := domain.PrincipalOf(subj)
	p.Via = domain.CredentialAPIKey
	p.KeyID = k.ID
	return p, nil
}

// keySubject loads the owner of k. A missing owner row leaves the subject
// empty, which CheckPrincipalActive refuses.
func (h AuthenticateAPIKeyHandler) keySubject(ctx context.Context, k domain.APIKey) (domain.SessionSubject, domain.PrincipalKind, error) {
	if k.Personal() {
		u, err := h.users.GetUser(ctx, k.UserID)
		if err != nil {
			return domain.SessionSubject{}, domain.PrincipalUser, notFoundAs(err, domain.ErrUserNotActive)
		}
		return domain.SessionSubject{User: &u}, domain.PrincipalUser, nil
	}
	sa, err := h.accounts.GetServiceAccount(ctx, k.ServiceAccountID)
	if err != nil {
		return domain.SessionSubject{}, domain.PrincipalServiceAccount, notFoundAs(err, domain.ErrUserNotActive)
	}
	return domain.SessionSubject{ServiceAccount: &sa}, domain.PrincipalServiceAccount, nil
}
