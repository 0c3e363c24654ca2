package identity_test

import (
	"context"
	"crypto/rand"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/uuid"

	"github.com/threadengine/engine/app/identity"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
	"github.com/threadengine/engine/ports/portstest"
)

// countingKeys counts the key lookups that reach the store.
type countingKeys struct {
	ports.APIKeys
	byHash atomic.Int64
}

func (c *countingKeys) GetAPIKeyByHash(ctx context.Context, hash string) (domain.APIKey, error) {
	c.byHash.Add(1)
	return c.APIKeys.GetAPIKeyByHash(ctx, hash)
}

// countingSessions counts the session lookups that reach the store.
type countingSessions struct {
	ports.Sessions
	byHash atomic.Int64
}

func (c *countingSessions) GetSessionByTokenHash(ctx context.Context, hash string) (domain.Session, error) {
	c.byHash.Add(1)
	return c.Sessions.GetSessionByTokenHash(ctx, hash)
}

type cachedFixture struct {
	*fixture
	keys *countingKeys
	sess *countingSessions
}

func newCachedFixture(t *testing.T, ttl time.Duration) *cachedFixture {
	t.Helper()
	st := portstest.NewIdentity()
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	keys, sess := &countingKeys{APIKeys: st}, &countingSessions{Sessions: st}
	id := identity.New(identity.Deps{
		Users: st, ServiceAccounts: st, APIKeys: keys, Sessions: sess, Audit: st, Settings: st,
		Clock: clock, Random: rand.Reader, NewID: uuid.NewString, AuthCacheTTL: ttl,
	})
	f := &cachedFixture{fixture: &fixture{id: id, store: st, clock: clock}, keys: keys, sess: sess}
	f.bootstrap(t)
	return f
}

// member creates an active member with a personal key.
func (f *cachedFixture) member(t *testing.T, email string, expiresInDays *int) (domain.User, string) {
	t.Helper()
	u, _, err := f.id.Application().Commands.InviteUser.Handle(f.admin, inviteReq(email, "M", domain.RoleMember))
	if err != nil {
		t.Fatal(err)
	}
	if u, err = f.id.Application().Commands.ActivateBySignIn.Handle(context.Background(), u.ID); err != nil {
		t.Fatal(err)
	}
	p := domain.PrincipalOf(domain.SessionSubject{User: &u})
	secret, _, err := f.id.Application().Commands.CreateAPIKey.Handle(as(p), identity.CreateAPIKeyInput{Name: "m", ExpiresInDays: expiresInDays})
	if err != nil {
		t.Fatal(err)
	}
	return u, secret
}

// authTwice authenticates twice and checks the second use was a cache hit.
func (f *cachedFixture) authTwice(t *testing.T, secret string) domain.Principal {
	t.Helper()
	if _, err := f.id.Application().Queries.AuthenticateAPIKey.Handle(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	before := f.keys.byHash.Load()
	p, err := f.id.Application().Queries.AuthenticateAPIKey.Handle(context.Background(), secret)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.keys.byHash.Load() - before; n != 0 {
		t.Fatalf("second authentication read the key %d times; want a cache hit", n)
	}
	return p
}

func TestAuthCacheAppliesMutationsAtOnce(t *testing.T) {
	t.Parallel()
	f := newCachedFixture(t, time.Minute)
	ctx := context.Background()
	u, secret := f.member(t, "m@example.com", nil)

	f.authTwice(t, secret)
	suspended := string(domain.StatusSuspended)
	if _, err := f.id.Application().Commands.UpdateUser.Handle(f.admin, u.ID, identity.UserPatch{Status: &suspended}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.id.Application().Queries.AuthenticateAPIKey.Handle(ctx, secret); !isCode(err, domain.CodeUserNotActive) {
		t.Fatalf("suspended owner's cached key: %v", err)
	}

	active, viewer := string(domain.StatusActive), string(domain.RoleViewer)
	if _, err := f.id.Application().Commands.UpdateUser.Handle(f.admin, u.ID, identity.UserPatch{Status: &active}); err != nil {
		t.Fatal(err)
	}
	if p := f.authTwice(t, secret); p.Role != domain.RoleMember {
		t.Fatalf("role %s", p.Role)
	}
	if _, err := f.id.Application().Commands.UpdateUser.Handle(f.admin, u.ID, identity.UserPatch{Role: &viewer}); err != nil {
		t.Fatal(err)
	}
	if p, err := f.id.Application().Queries.AuthenticateAPIKey.Handle(ctx, secret); err != nil || p.Role != domain.RoleViewer {
		t.Fatalf("after role change: %+v %v", p, err)
	}

	p := f.authTwice(t, secret)
	if _, err := f.id.Application().Commands.RevokeAPIKey.Handle(f.admin, p.KeyID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.id.Application().Queries.AuthenticateAPIKey.Handle(ctx, secret); !isCode(err, domain.CodeAPIKeyRevoked) {
		t.Fatalf("revoked cached key: %v", err)
	}

	// Sessions: sign-out and the source key's revocation apply at once.
	_, owner := f.member(t, "s@example.com", nil)
	token, _, _, err := f.id.Application().Commands.ExchangeAPIKey.Handle(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.id.Application().Queries.AuthenticateSession.Handle(ctx, token); err != nil {
		t.Fatal(err)
	}
	before := f.sess.byHash.Load()
	sp, err := f.id.Application().Queries.AuthenticateSession.Handle(ctx, token)
	if err != nil || f.sess.byHash.Load() != before {
		t.Fatalf("session not served from the cache: %v (%d lookups)", err, f.sess.byHash.Load()-before)
	}
	if _, err := f.id.Application().Commands.RevokeAPIKey.Handle(f.admin, sp.KeyID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.id.Application().Queries.AuthenticateSession.Handle(ctx, token); err == nil {
		t.Fatal("session of a revoked key still valid")
	}
	_, other := f.member(t, "o@example.com", nil)
	token, _, _, err = f.id.Application().Commands.ExchangeAPIKey.Handle(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := f.id.Application().Queries.AuthenticateSession.Handle(ctx, token); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.id.Application().Commands.SignOut.Handle(ctx, token); err != nil {
		t.Fatal(err)
	}
	if _, err := f.id.Application().Queries.AuthenticateSession.Handle(ctx, token); !isCode(err, domain.CodeSessionRevoked) {
		t.Fatalf("signed-out session: %v", err)
	}
}

func TestAuthCacheHitHonoursExpiry(t *testing.T) {
	t.Parallel()
	f := newCachedFixture(t, time.Minute)
	ctx := context.Background()
	one := 1
	_, secret := f.member(t, "m@example.com", &one)
	token, _, _, err := f.id.Application().Commands.ExchangeAPIKey.Handle(ctx, f.key)
	if err != nil {
		t.Fatal(err)
	}
	f.authTwice(t, secret)
	if _, err := f.id.Application().Queries.AuthenticateSession.Handle(ctx, token); err != nil {
		t.Fatal(err)
	}
	// Only the fake clock moves: the entries are still fresh, the
	// credentials are not.
	f.clock.Advance(9 * time.Hour)
	if _, err := f.id.Application().Queries.AuthenticateSession.Handle(ctx, token); !isCode(err, domain.CodeSessionExpired) {
		t.Fatalf("expired session: %v", err)
	}
	f.clock.Advance(16 * time.Hour)
	before := f.keys.byHash.Load()
	if _, err := f.id.Application().Queries.AuthenticateAPIKey.Handle(ctx, secret); !isCode(err, domain.CodeAPIKeyExpired) {
		t.Fatalf("expired key: %v", err)
	}
	if f.keys.byHash.Load() != before {
		t.Fatal("expiry was not decided on the cached entry")
	}
}

// TestAuthCacheTTL shows the multi-replica bound: a change written to the
// database by someone else (here the store directly) is seen once the entry
// is older than the TTL, and the cache is off with a zero TTL.
func TestAuthCacheTTL(t *testing.T) {
	t.Parallel()
	// In a synctest bubble the TTL's clock moves only with the sleep: on a
	// busy machine the entry still stands for the check within the TTL.
	synctest.Test(t, func(t *testing.T) {
		f := newCachedFixture(t, 200*time.Millisecond)
		ctx := context.Background()
		p := f.authTwice(t, f.key)
		if _, err := f.store.RevokeAPIKey(ctx, p.KeyID, f.clock.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := f.id.Application().Queries.AuthenticateAPIKey.Handle(ctx, f.key); err != nil {
			t.Fatalf("within the TTL the entry stands (documented): %v", err)
		}
		time.Sleep(300 * time.Millisecond)
		if _, err := f.id.Application().Queries.AuthenticateAPIKey.Handle(ctx, f.key); !isCode(err, domain.CodeAPIKeyRevoked) {
			t.Fatalf("after the TTL: %v", err)
		}

		off := newCachedFixture(t, 0)
		before := off.keys.byHash.Load()
		for range 3 {
			if _, err := off.id.Application().Queries.AuthenticateAPIKey.Handle(ctx, off.key); err != nil {
				t.Fatal(err)
			}
		}
		if n := off.keys.byHash.Load() - before; n != 3 {
			t.Fatalf("cache disabled but %d lookups for 3 authentications", n)
		}

	})
}

// TestAuthCacheLastUsedStillTouched checks hits keep last_used_at current
// (throttled to once a minute of the engine clock).
func TestAuthCacheLastUsedStillTouched(t *testing.T) {
	t.Parallel()
	f := newCachedFixture(t, time.Hour)
	ctx := context.Background()
	p := f.authTwice(t, f.key)
	f.clock.Advance(2 * time.Minute)
	if _, err := f.id.Application().Queries.AuthenticateAPIKey.Handle(ctx, f.key); err != nil {
		t.Fatal(err)
	}
	k, err := f.store.GetAPIKey(ctx, p.KeyID)
	if err != nil {
		t.Fatal(err)
	}
	if k.LastUsedAt == nil || !k.LastUsedAt.Equal(f.clock.Now()) {
		t.Fatalf("last_used_at %v, want %v", k.LastUsedAt, f.clock.Now())
	}
}

// TestAuthCacheConcurrentHits runs hits in parallel (meant for -race) and
// checks a revocation made meanwhile holds for every later request.
func TestAuthCacheConcurrentHits(t *testing.T) {
	t.Parallel()
	f := newCachedFixture(t, time.Minute)
	ctx := context.Background()
	p := f.authTwice(t, f.key)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				f.clock.Advance(time.Second) // crosses the touch interval now and then
				if _, err := f.id.Application().Queries.AuthenticateAPIKey.Handle(ctx, f.key); err != nil && !isCode(err, domain.CodeAPIKeyRevoked) {
					t.Error(err)
					return
				}
			}
		}()
	}
	if _, err := f.id.Application().Commands.RevokeAPIKey.Handle(f.admin, p.KeyID); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := f.id.Application().Queries.AuthenticateAPIKey.Handle(ctx, f.key); !isCode(err, domain.CodeAPIKeyRevoked) {
			t.Fatalf("after revocation: %v", err)
		}
	}
	wg.Wait()
	if _, err := f.id.Application().Queries.AuthenticateAPIKey.Handle(ctx, f.key); !isCode(err, domain.CodeAPIKeyRevoked) {
		t.Fatalf("after revocation: %v", err)
	}
}
