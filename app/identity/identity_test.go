package identity_test

import (
	"context"
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/threadengine/engine/adapters/identitystore"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/identity"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports/portstest"
)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

type fixture struct {
	id    *identity.Module
	store *portstest.Identity
	clock *fakeClock
	owner domain.User
	key   string
	admin context.Context
}

func newFixture(t *testing.T, license string) *fixture {
	t.Helper()
	st := portstest.NewIdentity()
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	id := identity.New(identity.Deps{
		Users: st, ServiceAccounts: st, APIKeys: st, Sessions: st, Audit: st, Settings: st,
		Clock: clock, Random: rand.Reader, NewID: uuid.NewString, LicenseKey: license,
	})
	return &fixture{id: id, store: st, clock: clock}
}

func (f *fixture) bootstrap(t *testing.T) {
	t.Helper()
	u, key, err := f.id.Application().Commands.BootstrapOwner.Handle(context.Background(), "Owner@Example.com", "Owner")
	if err != nil {
		t.Fatal(err)
	}
	f.owner, f.key = u, key
	p, err := f.id.Application().Queries.AuthenticateAPIKey.Handle(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	f.admin = authz.WithPrincipal(context.Background(), p)
}

func as(p domain.Principal) context.Context { return authz.WithPrincipal(context.Background(), p) }

// inviteReq is an invitation with every field given, as POST /v1/users sends it.
func inviteReq(email, fullName string, role domain.Role) identity.InviteRequest {
	r := string(role)
	return identity.InviteRequest{Email: &email, FullName: fullName, Role: &r}
}

func wantCode(t *testing.T, err error, code domain.Code) {
	t.Helper()
	if domain.CodeOf(err) != code {
		t.Fatalf("got %v, want %s", err, code)
	}
}

func TestBootstrapOwner(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	ctx := context.Background()
	// an invited user with the owner's email is promoted and activated
	inv, _ := domain.NewInvitedUser(uuid.NewString(), "owner@example.com", "", domain.RoleViewer, f.clock.Now())
	if err := f.store.CreateUser(ctx, inv); err != nil {
		t.Fatal(err)
	}
	f.bootstrap(t)
	if f.owner.ID != inv.ID || !f.owner.IsActiveAdmin() || f.owner.FullName != "Owner" {
		t.Fatalf("owner %+v", f.owner)
	}
	if _, _, err := f.id.Application().Commands.BootstrapOwner.Handle(ctx, "other@example.com", ""); domain.KindOf(err) != domain.KindConflict {
		t.Fatalf("second bootstrap: %v", err)
	}
	if _, _, err := f.id.Application().Commands.BootstrapOwner.Handle(ctx, "not an email", ""); err == nil {
		t.Fatal("bad email accepted")
	}
}

func TestInviteAndUpdate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	f.bootstrap(t)
	if _, _, err := f.id.Application().Commands.InviteUser.Handle(context.Background(), inviteReq("a@example.com", "", domain.RoleViewer)); domain.KindOf(err) != domain.KindUnauthenticated {
		t.Fatalf("anonymous invite: %v", err)
	}
	member := as(domain.Principal{Kind: domain.PrincipalUser, ID: "m", Role: domain.RoleMember})
	if _, _, err := f.id.Application().Commands.InviteUser.Handle(member, inviteReq("a@example.com", "", domain.RoleViewer)); domain.KindOf(err) != domain.KindForbidden {
		t.Fatalf("member invite: %v", err)
	}
	u, created, err := f.id.Application().Commands.InviteUser.Handle(f.admin, inviteReq("a@example.com", "A", domain.RoleViewer))
	if err != nil || !created || u.Status != domain.StatusInvited {
		t.Fatalf("invite: %+v %v %v", u, created, err)
	}
	again, created, err := f.id.Application().Commands.InviteUser.Handle(f.admin, inviteReq("A@example.com", "A", domain.RoleViewer))
	if err != nil || created || again.ID != u.ID {
		t.Fatalf("repeat: %v %v", created, err)
	}
	_, _, err = f.id.Application().Commands.InviteUser.Handle(f.admin, inviteReq("a@example.com", "A", domain.RoleMember))
	wantCode(t, err, domain.CodeEmailTaken)

	str := func(s string) *string { return &s }
	_, err = f.id.Application().Commands.UpdateUser.Handle(f.admin, u.ID, identity.UserPatch{Status: str("active")})
	wantCode(t, err, domain.CodeActivationRequiresSignIn)
	_, err = f.id.Application().Commands.UpdateUser.Handle(f.admin, u.ID, identity.UserPatch{Role: str("boss")})
	wantCode(t, err, domain.CodeValidationFailed)
	// the last admin can neither leave nor be demoted
	for _, p := range []identity.UserPatch{{Status: str("suspended")}, {Status: str("archived")}, {Role: str("member")}} {
		_, err = f.id.Application().Commands.UpdateUser.Handle(f.admin, f.owner.ID, p)
		wantCode(t, err, domain.CodeLastActiveAdminRequired)
	}
	// once the invitee signs in and is promoted, the owner may step down
	if _, err := f.id.Application().Commands.ActivateBySignIn.Handle(context.Background(), u.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.id.Application().Commands.UpdateUser.Handle(f.admin, u.ID, identity.UserPatch{Role: str("admin")}); err != nil {
		t.Fatal(err)
	}
	if got, err := f.id.Application().Commands.UpdateUser.Handle(f.admin, f.owner.ID, identity.UserPatch{Role: str("member")}); err != nil || got.Role != domain.RoleMember {
		t.Fatalf("step down: %v", err)
	}
	// archived users cannot be re-invited
	if _, err := f.id.Application().Commands.UpdateUser.Handle(f.admin, f.owner.ID, identity.UserPatch{Status: str("archived")}); err != nil {
		t.Fatal(err)
	}
	_, _, err = f.id.Application().Commands.InviteUser.Handle(as(domain.Principal{Kind: domain.PrincipalUser, ID: u.ID, Role: domain.RoleAdmin}), inviteReq("owner@example.com", "Owner", domain.RoleAdmin))
	wantCode(t, err, domain.CodeEmailTaken)
}

func TestAPIKeysAndSessions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	f.bootstrap(t)
	ctx := context.Background()
	for _, bad := range []string{"", "td_x", "tes_nope", "Bearer"} {
		if _, err := f.id.Application().Queries.AuthenticateAPIKey.Handle(ctx, bad); domain.KindOf(err) != domain.KindUnauthenticated {
			t.Fatalf("%q: %v", bad, err)
		}
	}
	unknown, _ := domain.NewAPIKeySecret(rand.Reader)
	if _, err := f.id.Application().Queries.AuthenticateAPIKey.Handle(ctx, unknown); domain.KindOf(err) != domain.KindUnauthenticated {
		t.Fatalf("unknown key: %v", err)
	}

	one, two := 1, 2
	past := f.clock.Now().Add(-time.Hour)
	_, _, err := f.id.Application().Commands.CreateAPIKey.Handle(f.admin, identity.CreateAPIKeyInput{Name: "x", ExpiresInDays: &one, ExpiresAt: &past})
	wantCode(t, err, domain.CodeValidationFailed)
	zero := 0
	_, _, err = f.id.Application().Commands.CreateAPIKey.Handle(f.admin, identity.CreateAPIKeyInput{Name: "x", ExpiresInDays: &zero})
	wantCode(t, err, domain.CodeValidationFailed)

	secret, k, err := f.id.Application().Commands.CreateAPIKey.Handle(f.admin, identity.CreateAPIKeyInput{Name: "short", ExpiresInDays: &two})
	if err != nil || !k.Personal() || k.UserID != f.owner.ID {
		t.Fatalf("create: %+v %v", k, err)
	}
	token, sess, p, err := f.id.Application().Commands.ExchangeAPIKey.Handle(ctx, secret)
	if err != nil || sess.SourceKeyID != k.ID || sess.Source != domain.SessionFromAPIKey || p.ID != f.owner.ID {
		t.Fatalf("exchange: %+v %v", sess, err)
	}
	if !sess.ExpiresAt.Equal(f.clock.Now().Add(8 * time.Hour)) {
		t.Fatalf("session ttl: %v", sess.ExpiresAt)
	}
	if p, err := f.id.Application().Queries.AuthenticateSession.Handle(ctx, token); err != nil || p.Via != domain.CredentialSession || p.KeyID != k.ID {
		t.Fatalf("session: %+v %v", p, err)
	}
	// the key expires after two days, taking its session... which has
	// expired already at 8h
	f.clock.Advance(9 * time.Hour)
	if _, err := f.id.Application().Queries.AuthenticateSession.Handle(ctx, token); !isCode(err, domain.CodeSessionExpired) {
		t.Fatalf("after 9h: %v", err)
	}
	f.clock.Advance(48 * time.Hour)
	if _, err := f.id.Application().Queries.AuthenticateAPIKey.Handle(ctx, secret); !isCode(err, domain.CodeAPIKeyExpired) {
		t.Fatalf("expired key: %v", err)
	}

	// service account key via a new account; its session stays non-human
	saSecret, saKey, err := f.id.Application().Commands.CreateAPIKey.Handle(f.admin, identity.CreateAPIKeyInput{Name: "ci", CreateServiceAccount: &identity.NewServiceAccountInput{Name: "ci-bot", Role: "viewer"}})
	if err != nil || saKey.Personal() {
		t.Fatalf("sa key: %v", err)
	}
	tok, _, sp, err := f.id.Application().Commands.ExchangeAPIKey.Handle(ctx, saSecret)
	if err != nil || sp.Kind != domain.PrincipalServiceAccount || sp.Role != domain.RoleViewer {
		t.Fatalf("sa exchange: %+v %v", sp, err)
	}
	if _, _, err := f.id.Application().Commands.CreateAPIKey.Handle(as(sp), identity.CreateAPIKeyInput{Name: "mine"}); domain.KindOf(err) != domain.KindForbidden {
		t.Fatalf("sa personal key: %v", err)
	}
	// revoking the key ends the session
	if _, err := f.id.Application().Commands.RevokeAPIKey.Handle(f.admin, saKey.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.id.Application().Queries.AuthenticateSession.Handle(ctx, tok); err == nil {
		t.Fatal("session survived key revocation")
	}
	// sign out
	tok2, _, _, err := f.id.Application().Commands.ExchangeAPIKey.Handle(ctx, f.key)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := f.id.Application().Commands.SignOut.Handle(ctx, tok2); err != nil || s.RevokedAt == nil {
		t.Fatalf("sign out: %v", err)
	}
	if _, err := f.id.Application().Queries.AuthenticateSession.Handle(ctx, tok2); !isCode(err, domain.CodeSessionRevoked) {
		t.Fatalf("after sign out: %v", err)
	}
	// keys list: admin sees all, others their own
	all, err := f.id.Application().Queries.ListAPIKeys.Handle(f.admin)
	if err != nil || len(all) != 3 {
		t.Fatalf("list: %d %v", len(all), err)
	}
	other := as(domain.Principal{Kind: domain.PrincipalUser, ID: "nobody", Role: domain.RoleMember})
	if mine, err := f.id.Application().Queries.ListAPIKeys.Handle(other); err != nil || len(mine) != 0 {
		t.Fatalf("member list: %d %v", len(mine), err)
	}
	if _, err := f.id.Application().Commands.RevokeAPIKey.Handle(other, k.ID); domain.KindOf(err) != domain.KindNotFound {
		t.Fatalf("foreign revoke: %v", err)
	}
}

func isCode(err error, c domain.Code) bool { return domain.CodeOf(err) == c }

func TestStartUserSessionAndLicense(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "lic-secret")
	ctx := context.Background()
	if _, _, _, err := f.id.Application().Commands.ExchangeLicenseKey.Handle(ctx, "lic-secret"); err == nil {
		t.Fatal("license exchange without an owner")
	}
	f.bootstrap(t)
	if _, _, _, err := f.id.Application().Commands.ExchangeLicenseKey.Handle(ctx, "lic-wrong"); domain.KindOf(err) != domain.KindUnauthenticated {
		t.Fatalf("wrong license: %v", err)
	}
	tok, sess, p, err := f.id.Application().Commands.ExchangeLicenseKey.Handle(ctx, "lic-secret")
	if err != nil || p.ID != f.owner.ID || sess.Source != domain.SessionFromLicense {
		t.Fatalf("license: %v", err)
	}
	if _, err := f.id.Application().Queries.AuthenticateSession.Handle(ctx, tok); err != nil {
		t.Fatal(err)
	}
	inv, _, err := f.id.Application().Commands.InviteUser.Handle(f.admin, inviteReq("b@example.com", "", domain.RoleMember))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.id.Application().Commands.StartUserSession.Handle(ctx, inv.ID, domain.SessionFromOIDC, "sub-1", "hint"); !isCode(err, domain.CodeUserNotActive) {
		t.Fatalf("invited session: %v", err)
	}
	if _, err := f.id.Application().Commands.ActivateBySignIn.Handle(ctx, inv.ID); err != nil {
		t.Fatal(err)
	}
	tok, sess, err = f.id.Application().Commands.StartUserSession.Handle(ctx, inv.ID, domain.SessionFromOIDC, "sub-1", "hint")
	if err != nil || sess.Identity != "sub-1" || sess.IDTokenHint != "hint" {
		t.Fatalf("oidc session: %+v %v", sess, err)
	}
	if p, err := f.id.Application().Queries.AuthenticateSession.Handle(ctx, tok); err != nil || p.Identity != "sub-1" || p.Role != domain.RoleMember {
		t.Fatalf("oidc principal: %+v %v", p, err)
	}
}

// BenchmarkAuthenticate measures the per-request credential check (hash
// lookup plus fresh owner row) on SQLite.
func BenchmarkAuthenticate(b *testing.B) {
	st := identitystore.New(sqldbtest.Open(b, sqldb.SQLite))
	id := identity.New(identity.Deps{
		Users: st, ServiceAccounts: st, APIKeys: st, Sessions: st, Audit: st, Settings: st,
		Clock: &fakeClock{now: time.Now().UTC()}, Random: rand.Reader, NewID: uuid.NewString,
	})
	ctx := context.Background()
	_, key, err := id.Application().Commands.BootstrapOwner.Handle(ctx, "bench@example.com", "")
	if err != nil {
		b.Fatal(err)
	}
	tok, _, _, err := id.Application().Commands.ExchangeAPIKey.Handle(ctx, key)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("api_key", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := id.Application().Queries.AuthenticateAPIKey.Handle(ctx, key); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("session", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := id.Application().Queries.AuthenticateSession.Handle(ctx, tok); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestInviteChecksPermissionBeforeTheRequest(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	f.bootstrap(t)
	viewer := as(domain.Principal{Kind: domain.PrincipalUser, ID: "v", Role: domain.RoleViewer})
	if _, _, err := f.id.Application().Commands.InviteUser.Handle(viewer, identity.InviteRequest{}); domain.KindOf(err) != domain.KindForbidden {
		t.Fatalf("viewer with an empty request: %v, want forbidden", err)
	}
	if _, _, err := f.id.Application().Commands.InviteUser.Handle(f.admin, identity.InviteRequest{Role: ptr("member")}); domain.CodeOf(err) != domain.CodeValidationFailed || domain.AsError(err).Field != "email" {
		t.Fatalf("admin without email: %v", err)
	}
	if _, _, err := f.id.Application().Commands.InviteUser.Handle(f.admin, identity.InviteRequest{Email: ptr("x@example.com")}); domain.AsError(err).Field != "role" {
		t.Fatalf("admin without role: %v", err)
	}
	u, created, err := f.id.Application().Commands.InviteUser.Handle(f.admin, identity.InviteRequest{Email: ptr("x@example.com"), Role: ptr("member"), FullName: "X"})
	if err != nil || !created || u.Status != domain.StatusInvited {
		t.Fatalf("invite: %+v %v %v", u, created, err)
	}
	list, err := f.id.Application().Queries.ListUsers.Handle(viewer)
	if err != nil || list.CanManage || len(list.Users) != 2 {
		t.Fatalf("viewer list: %+v %v", list, err)
	}
	if list, err = f.id.Application().Queries.ListUsers.Handle(f.admin); err != nil || !list.CanManage {
		t.Fatalf("admin list: %+v %v", list, err)
	}
	if _, err := f.id.Application().Commands.UpdateUser.Handle(viewer, u.ID, identity.UserPatch{}); domain.KindOf(err) != domain.KindForbidden {
		t.Fatalf("viewer empty patch: %v", err)
	}
	if _, err := f.id.Application().Commands.UpdateUser.Handle(f.admin, u.ID, identity.UserPatch{}); domain.CodeOf(err) != domain.CodeValidationFailed {
		t.Fatalf("admin empty patch: %v", err)
	}
}

func ptr(s string) *string { return &s }

// Erasure: administrators only, archived users only; the user keeps its id
// with a placeholder email, its sessions go, and the erasure is audited
// without the email it removed.
func TestEraseUser(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	f.bootstrap(t)
	app := f.id.Application()
	u, _, err := app.Commands.InviteUser.Handle(f.admin, inviteReq("gone@example.com", "Gone", domain.RoleMember))
	if err != nil {
		t.Fatal(err)
	}
	member := as(domain.Principal{Kind: domain.PrincipalUser, ID: "m", Role: domain.RoleMember})
	_, err = app.Commands.EraseUser.Handle(member, u.ID)
	wantCode(t, err, domain.CodeForbidden)
	_, err = app.Commands.EraseUser.Handle(f.admin, u.ID)
	wantCode(t, err, domain.CodeUserNotArchived)
	_, err = app.Commands.EraseUser.Handle(f.admin, "no-such-user")
	wantCode(t, err, domain.CodeNotFound)
	// The owner cannot be erased while active (the last admin stays).
	_, err = app.Commands.EraseUser.Handle(f.admin, f.owner.ID)
	wantCode(t, err, domain.CodeUserNotArchived)

	archived := "archived"
	if _, err := app.Commands.UpdateUser.Handle(f.admin, u.ID, identity.UserPatch{Status: &archived}); err != nil {
		t.Fatal(err)
	}
	erased, err := app.Commands.EraseUser.Handle(f.admin, u.ID)
	if err != nil || erased.ID != u.ID || erased.Email != domain.ErasedEmail(u.ID) || erased.FullName != "" || !erased.Erased() {
		t.Fatalf("erased %+v %v", erased, err)
	}
	if again, err := app.Commands.EraseUser.Handle(f.admin, u.ID); err != nil || !again.ErasedAt.Equal(*erased.ErasedAt) {
		t.Fatalf("again %+v %v", again, err)
	}
	var erasures int
	for _, e := range f.store.AuditLog() {
		for _, v := range e.Details {
			if s, ok := v.(string); ok && s == "gone@example.com" {
				t.Errorf("audit entry %s still holds the email: %+v", e.Action, e)
			}
		}
		if e.Action == "user.erased" {
			erasures++
			if e.Target != u.ID || len(e.Details) != 0 {
				t.Errorf("erasure entry %+v", e)
			}
		}
	}
	if erasures != 1 {
		t.Errorf("%d user.erased entries, want 1", erasures)
	}
}
