package identity

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// maxAuthCacheEntries bounds the memory a flood of distinct valid
// credentials can take; reaching it simply empties the cache.
const maxAuthCacheEntries = 10000

// authCache remembers successful authentications for a few seconds, so a
// busy API client does not cost two or three SQL reads per request.
//
// Correctness rests on two rules:
//   - only the rows are cached (key, session, owner), never the verdict: every
//     hit re-runs the same domain checks (expiry against the current clock,
//     revocation, owner status) as a database read would;
//   - every identity mutation made through this process bumps gen after it
//     has committed, and an entry is used only while gen still equals the
//     value read before its rows were loaded. A read racing a mutation is
//     therefore never served from the cache after the mutation returns.
//
// Changes that can take a credential away (a user updated, a key or session
// revoked) are also broadcast to every replica (Deps.Broadcast), which
// bumps its own gen on receipt; without a broadcast (or for a process that
// does not publish, like the bootstrap-owner command) another process's
// changes are seen after at most ttl.
type authCache struct {
	ttl  time.Duration
	now  func() time.Time // monotonic wall clock for ttl; domain expiry uses the use cases' clock
	gen  atomic.Uint64
	mu   sync.RWMutex
	keys map[string]*keyEntry     // by key hash
	sess map[string]*sessionEntry // by token hash
}

type keyEntry struct {
	gen   uint64
	until time.Time
	key   domain.APIKey
	subj  domain.SessionSubject
	kind  domain.PrincipalKind
	// lastUsed (unix nanoseconds, 0 = never) tracks the touches made while
	// the entry lives, so hits keep last_used_at throttled as before.
	lastUsed atomic.Int64
}

type sessionEntry struct {
	gen   uint64
	until time.Time
	sess  domain.Session
	subj  domain.SessionSubject
}

func newAuthCache(ttl time.Duration) *authCache {
	if ttl <= 0 {
		return nil
	}
	return &authCache{ttl: ttl, now: time.Now, keys: map[string]*keyEntry{}, sess: map[string]*sessionEntry{}}
}

// generation is read before loading the rows an entry will hold.
func (c *authCache) generation() uint64 {
	if c == nil {
		return 0
	}
	return c.gen.Load()
}

func (c *authCache) invalidate() {
	if c == nil {
		return
	}
	c.gen.Add(1)
	c.mu.Lock()
	clear(c.keys)
	clear(c.sess)
	c.mu.Unlock()
}

func (c *authCache) key(hash string) *keyEntry {
	if c == nil {
		return nil
	}
	c.mu.RLock()
	e := c.keys[hash]
	c.mu.RUnlock()
	if e == nil || e.gen != c.gen.Load() || !c.now().Before(e.until) {
		return nil
	}
	return e
}

func (c *authCache) putKey(hash string, gen uint64, k domain.APIKey, subj domain.SessionSubject, kind domain.PrincipalKind) *keyEntry {
	if c == nil {
		return nil
	}
	e := &keyEntry{gen: gen, until: c.now().Add(c.ttl), key: k, subj: subj, kind: kind}
	if k.LastUsedAt != nil {
		e.lastUsed.Store(k.LastUsedAt.UnixNano())
	}
	c.mu.Lock()
	if len(c.keys) >= maxAuthCacheEntries {
		clear(c.keys)
	}
	// A mutation may have bumped gen meanwhile; the entry is then already
	// stale and is never served.
	c.keys[hash] = e
	c.mu.Unlock()
	return e
}

func (c *authCache) session(hash string) *sessionEntry {
	if c == nil {
		return nil
	}
	c.mu.RLock()
	e := c.sess[hash]
	c.mu.RUnlock()
	if e == nil || e.gen != c.gen.Load() || !c.now().Before(e.until) {
		return nil
	}
	return e
}

func (c *authCache) putSession(hash string, gen uint64, sess domain.Session, subj domain.SessionSubject) {
	if c == nil {
		return
	}
	e := &sessionEntry{gen: gen, until: c.now().Add(c.ttl), sess: sess, subj: subj}
	c.mu.Lock()
	if len(c.sess) >= maxAuthCacheEntries {
		clear(c.sess)
	}
	c.sess[hash] = e
	c.mu.Unlock()
}

// Invalidate forgets every cached authentication. The identity use cases
// call it after each of their own identity mutations; code that changes
// users, service accounts, API keys or sessions through the ports directly
// (the OIDC sign-in) must call it after committing.
func (m *Module) Invalidate() { m.cache.invalidate() }

// The wrappers below make every mutating call the identity use cases make
// through their ports invalidate the cache once the store has returned (also
// on error: a failed call may still have committed). A method added to these
// ports that changes identity rows must be overridden here too.

type invalidatingUsers struct {
	ports.Users
	inv     func()
	changed func(principalID string)
}

func (w invalidatingUsers) CreateUser(ctx context.Context, u domain.User) error {
	defer w.inv()
	return w.Users.CreateUser(ctx, u)
}

func (w invalidatingUsers) UpdateUser(ctx context.Context, id string, fn ports.UserUpdateFn) (domain.User, error) {
	defer w.changed(id)
	return w.Users.UpdateUser(ctx, id, fn)
}

type invalidatingServiceAccounts struct {
	ports.ServiceAccounts
	inv func()
}

func (w invalidatingServiceAccounts) CreateServiceAccount(ctx context.Context, sa domain.ServiceAccount) error {
	defer w.inv()
	return w.ServiceAccounts.CreateServiceAccount(ctx, sa)
}

// invalidatingAPIKeys leaves TouchAPIKey alone: last_used_at plays no part
// in authentication.
type invalidatingAPIKeys struct {
	ports.APIKeys
	inv     func()
	changed func(principalID string)
}

func (w invalidatingAPIKeys) CreateAPIKey(ctx context.Context, k domain.APIKey) error {
	defer w.inv()
	return w.APIKeys.CreateAPIKey(ctx, k)
}

func (w invalidatingAPIKeys) RevokeAPIKey(ctx context.Context, id string, now time.Time) (domain.APIKey, error) {
	k, err := w.APIKeys.RevokeAPIKey(ctx, id, now)
	owner := k.UserID + k.ServiceAccountID
	if owner == "" {
		owner = AnyPrincipal // not known (the revoke failed): recheck every socket
	}
	w.changed(owner)
	return k, err
}

type invalidatingSessions struct {
	ports.Sessions
	inv     func()
	changed func(principalID string)
}

func (w invalidatingSessions) CreateSession(ctx context.Context, sess domain.Session) error {
	defer w.inv()
	return w.Sessions.CreateSession(ctx, sess)
}

// RevokeSession broadcasts without a principal: browser sessions hold no
// socket, so other replicas only forget cached authentications.
func (w invalidatingSessions) RevokeSession(ctx context.Context, id string, now time.Time) error {
	defer w.changed("")
	return w.Sessions.RevokeSession(ctx, id, now)
}

func (w invalidatingSessions) DeleteExpiredSessions(ctx context.Context, cutoff time.Time) (int, error) {
	defer w.inv()
	return w.Sessions.DeleteExpiredSessions(ctx, cutoff)
}
