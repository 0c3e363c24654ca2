package signin_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/threadengine/engine/adapters/identitystore"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/identity"
	"github.com/threadengine/engine/app/signin"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// TestAuthCacheSignInInvalidates: SignIn changes users through ports.Users
// directly (not through the identity use cases); promoting the license owner must still
// apply to the next request made with the owner's cached key.
func TestAuthCacheSignInInvalidates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := identitystore.New(sqldbtest.Open(t, sqldb.SQLite))
	clock := ports.SystemClock{}
	id := identity.New(identity.Deps{Users: st, ServiceAccounts: st, APIKeys: st, Sessions: st, Audit: st, Settings: st,
		Clock: clock, Random: rand.Reader, NewID: uuid.NewString, AuthCacheTTL: time.Minute})
	lic := &fakeLicense{info: ports.LicenseInfo{Account: "acme", OwnerEmail: "boss@example.com", Products: []string{"threadengine"}, ManagedIdentity: true}}
	si := signin.New(signin.Deps{Users: st, Bindings: st, StartSession: id.Application().Commands.StartUserSession, Invalidate: id.Invalidate, Product: "threadengine", Audit: st, Setting: st,
		License: signin.NewLicenseMonitor(lic, clock, time.Hour, nil), Clock: clock, NewID: uuid.NewString})

	u, err := domain.NewInvitedUser(uuid.NewString(), "boss@example.com", "", domain.RoleMember, time.Now().UTC())
	if err != nil {
		t.Fatal(err)
	}
	if err := u.ActivateBySignIn(time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	secret, _, err := id.Application().Commands.CreateAPIKey.Handle(authz.WithPrincipal(context.Background(), domain.PrincipalOf(domain.SessionSubject{User: &u})), identity.CreateAPIKeyInput{Name: "k"})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if p, err := id.Application().Queries.AuthenticateAPIKey.Handle(ctx, secret); err != nil || p.Role != domain.RoleMember {
			t.Fatalf("before sign-in: %+v %v", p, err)
		}
	}
	// EnsureLicenseOwner (the license-key exchange) promotes without
	// opening a session, so only SignIn's own invalidation can apply it.
	if uid, err := si.EnsureLicenseOwner(ctx); err != nil || uid != u.ID {
		t.Fatalf("ensure owner: %s %v", uid, err)
	}
	if p, err := id.Application().Queries.AuthenticateAPIKey.Handle(ctx, secret); err != nil || p.Role != domain.RoleAdmin {
		t.Fatalf("after the owner's promotion by EnsureLicenseOwner: %+v %v", p, err)
	}
	for range 2 {
		if _, err := id.Application().Queries.AuthenticateAPIKey.Handle(ctx, secret); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := si.Complete(ctx, who("s-boss", "boss@example.com", true), ""); err != nil || res.User.Role != domain.RoleAdmin {
		t.Fatalf("owner sign-in: %+v %v", res.User, err)
	}
}
