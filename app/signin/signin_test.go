package signin_test

import (
	"context"
	"crypto/rand"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/threadengine/engine/app/identity"
	"github.com/threadengine/engine/app/signin"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
	"github.com/threadengine/engine/ports/portstest"
)

func TestCheckLicenseForSignIn(t *testing.T) {
	t.Parallel()
	ok := ports.LicenseInfo{Account: "acme", Products: []string{"other", "threadengine"}, ManagedIdentity: true}
	with := func(fn func(*ports.LicenseInfo)) ports.LicenseInfo { l := ok; fn(&l); return l }
	cases := []struct {
		name string
		st   signin.LicenseStatus
		code domain.Code
		kind domain.Kind
	}{
		{"usable", signin.LicenseStatus{Info: ok}, "", 0},
		{"registry unreachable", signin.LicenseStatus{Err: domain.E(domain.KindUnavailable, domain.CodeUnavailable, "down")}, domain.CodeLicenseUnavailable, domain.KindUnavailable},
		{"foreign error", signin.LicenseStatus{Err: errors.New("dial tcp: refused")}, domain.CodeLicenseUnavailable, domain.KindUnavailable},
		{"key refused", signin.LicenseStatus{Err: domain.E(domain.KindForbidden, "license_invalid", "no")}, domain.CodeLicenseInvalid, domain.KindForbidden},
		{"suspended", signin.LicenseStatus{Info: with(func(l *ports.LicenseInfo) { l.Suspended = true })}, domain.CodeLicenseSuspended, domain.KindForbidden},
		{"suspended wins over disabled identity", signin.LicenseStatus{Info: with(func(l *ports.LicenseInfo) { l.Suspended, l.ManagedIdentity = true, false })}, domain.CodeLicenseSuspended, domain.KindForbidden},
		{"managed identity disabled", signin.LicenseStatus{Info: with(func(l *ports.LicenseInfo) { l.ManagedIdentity = false })}, domain.CodeManagedIdentityDisabled, domain.KindForbidden},
		{"product missing", signin.LicenseStatus{Info: with(func(l *ports.LicenseInfo) { l.Products = []string{"other"} })}, domain.CodeProductNotLicensed, domain.KindForbidden},
		{"no products", signin.LicenseStatus{Info: with(func(l *ports.LicenseInfo) { l.Products = nil })}, domain.CodeProductNotLicensed, domain.KindForbidden},
		{"product match is exact", signin.LicenseStatus{Info: with(func(l *ports.LicenseInfo) { l.Products = []string{"ThreadEngine"} })}, domain.CodeProductNotLicensed, domain.KindForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := signin.CheckLicenseForSignIn(tc.st, "threadengine")
			if domain.CodeOf(err) != tc.code {
				t.Fatalf("code %q, want %q (%v)", domain.CodeOf(err), tc.code, err)
			}
			if err != nil && domain.KindOf(err) != tc.kind {
				t.Fatalf("kind %v, want %v", domain.KindOf(err), tc.kind)
			}
		})
	}
}

// fakeLicense is a ports.License whose answer tests change.
type fakeLicense struct {
	mu    sync.Mutex
	info  ports.LicenseInfo
	err   error
	calls int
}

func (f *fakeLicense) Check(context.Context) (ports.LicenseInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.info, f.err
}

func (f *fakeLicense) set(fn func(*fakeLicense)) { f.mu.Lock(); fn(f); f.mu.Unlock() }

func TestLicenseMonitorRechecksOnlyWhenNotUsable(t *testing.T) {
	t.Parallel()
	lic := &fakeLicense{err: domain.E(domain.KindUnavailable, domain.CodeUnavailable, "down")}
	m := signin.NewLicenseMonitor(lic, ports.SystemClock{}, time.Hour, nil)
	ctx := context.Background()
	if err := signin.CheckLicenseForSignIn(m.Current(ctx, "threadengine"), "threadengine"); domain.CodeOf(err) != domain.CodeLicenseUnavailable {
		t.Fatalf("first check: %v", err)
	}
	// A failed result is re-checked on demand, so a fixed registry works at once.
	lic.set(func(f *fakeLicense) {
		f.err, f.info = nil, ports.LicenseInfo{Account: "a", Products: []string{"threadengine"}, ManagedIdentity: true}
	})
	if err := signin.CheckLicenseForSignIn(m.Current(ctx, "threadengine"), "threadengine"); err != nil {
		t.Fatalf("after fix: %v", err)
	}
	// A usable result is cached until the next periodic check...
	lic.set(func(f *fakeLicense) { f.info.Suspended = true })
	before := lic.calls
	if err := signin.CheckLicenseForSignIn(m.Current(ctx, "threadengine"), "threadengine"); err != nil || lic.calls != before {
		t.Fatalf("usable result re-fetched: %v calls %d→%d", err, before, lic.calls)
	}
	// ...which Run performs every interval.
	m2 := signin.NewLicenseMonitor(lic, ports.SystemClock{}, 20*time.Millisecond, nil)
	lic.set(func(f *fakeLicense) { f.info.Suspended = false })
	m2.Refresh(ctx)
	lic.set(func(f *fakeLicense) { f.info.Suspended = true })
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go m2.Run(runCtx)
	deadline := time.Now().Add(time.Minute)
	for domain.CodeOf(signin.CheckLicenseForSignIn(m2.Current(ctx, "threadengine"), "threadengine")) != domain.CodeLicenseSuspended {
		if time.Now().After(deadline) {
			t.Fatal("periodic check never saw the suspension")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type signInFixture struct {
	store  *portstest.Identity
	id     *identity.Module
	lic    *fakeLicense
	signIn *signin.SignIn
}

const testIssuer = "https://registry.example"

func newSignInFixture(t *testing.T) *signInFixture {
	t.Helper()
	st := portstest.NewIdentity()
	clock := ports.SystemClock{}
	id := identity.New(identity.Deps{Users: st, ServiceAccounts: st, APIKeys: st, Sessions: st, Audit: st, Settings: st,
		Clock: clock, Random: rand.Reader, NewID: uuid.NewString})
	lic := &fakeLicense{info: ports.LicenseInfo{Account: "acme", OwnerEmail: "Boss@Example.com", Products: []string{"threadengine"}, ManagedIdentity: true}}
	si := signin.New(signin.Deps{Users: st, Bindings: st, StartSession: id.Application().Commands.StartUserSession, Invalidate: id.Invalidate, Product: "threadengine", Audit: st, Setting: st,
		License: signin.NewLicenseMonitor(lic, clock, time.Hour, nil), Clock: clock, NewID: uuid.NewString})
	return &signInFixture{store: st, id: id, lic: lic, signIn: si}
}

func (f *signInFixture) invite(t *testing.T, email string, role domain.Role) domain.User {
	t.Helper()
	u, err := domain.NewInvitedUser(uuid.NewString(), email, "", role, time.Now().UTC())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.CreateUser(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

func who(sub, email string, verified bool) signin.RegistryIdentity {
	return signin.RegistryIdentity{Issuer: testIssuer, Subject: sub, Email: email, EmailVerified: verified}
}

func TestSignInRulesOnStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("owner needs a verified email", func(t *testing.T) {
		f := newSignInFixture(t)
		_, err := f.signIn.Complete(ctx, who("s-boss", "boss@example.com", false), "")
		if domain.CodeOf(err) != domain.CodeEmailNotVerified {
			t.Fatalf("got %v", err)
		}
		if n, _ := f.store.CountUsers(ctx); n != 0 {
			t.Fatalf("unverified owner created %d users", n)
		}
	})

	t.Run("owner is created, recorded and can use the session", func(t *testing.T) {
		f := newSignInFixture(t)
		res, err := f.signIn.Complete(ctx, who("s-boss", "BOSS@example.com", true), "hint")
		if err != nil {
			t.Fatal(err)
		}
		if res.User.Role != domain.RoleAdmin || res.User.Status != domain.StatusActive || res.User.Email != "boss@example.com" {
			t.Fatalf("owner %+v", res.User)
		}
		if res.Session.Source != domain.SessionFromOIDC || res.Session.IDTokenHint != "hint" || res.Session.Identity != "s-boss" {
			t.Fatalf("session %+v", res.Session)
		}
		p, err := f.id.Application().Queries.AuthenticateSession.Handle(ctx, res.Token)
		if err != nil || p.ID != res.User.ID || p.Role != domain.RoleAdmin {
			t.Fatalf("session principal %+v %v", p, err)
		}
		if v, ok, _ := f.store.GetSetting(ctx, identity.OwnerSettingKey); !ok || v != res.User.ID {
			t.Fatalf("owner setting %q %v", v, ok)
		}
	})

	t.Run("suspended member owner is reactivated as admin", func(t *testing.T) {
		f := newSignInFixture(t)
		u := f.invite(t, "boss@example.com", domain.RoleMember)
		if _, err := f.store.UpdateUser(ctx, u.ID, func(u *domain.User, _ []string) error {
			if err := u.ActivateBySignIn(time.Now()); err != nil {
				return err
			}
			return u.ChangeStatusByAdmin(domain.StatusSuspended, time.Now())
		}); err != nil {
			t.Fatal(err)
		}
		res, err := f.signIn.Complete(ctx, who("s-boss", "boss@example.com", true), "")
		if err != nil || res.User.ID != u.ID || res.User.Role != domain.RoleAdmin || res.User.Status != domain.StatusActive {
			t.Fatalf("owner sign-in: %+v %v", res.User, err)
		}
	})

	t.Run("inactive binding is refused", func(t *testing.T) {
		f := newSignInFixture(t)
		u := f.invite(t, "ivy@example.com", domain.RoleViewer)
		if err := f.store.CreateBinding(ctx, ports.IdentityBinding{Issuer: testIssuer, Subject: "s-ivy", UserID: u.ID, Email: u.Email, Active: false, CreatedAt: time.Now().UTC()}); err != nil {
			t.Fatal(err)
		}
		_, err := f.signIn.Complete(ctx, who("s-ivy", "ivy@example.com", true), "")
		if domain.CodeOf(err) != domain.CodeBindingInactive {
			t.Fatalf("got %v", err)
		}
		if u, _ = f.store.GetUser(ctx, u.ID); u.Status != domain.StatusInvited {
			t.Fatalf("refused sign-in changed the user: %+v", u)
		}
	})

	t.Run("a bound user cannot sign in with another identity", func(t *testing.T) {
		f := newSignInFixture(t)
		f.invite(t, "dan@example.com", domain.RoleMember)
		if _, err := f.signIn.Complete(ctx, who("s-dan", "dan@example.com", true), ""); err != nil {
			t.Fatal(err)
		}
		_, err := f.signIn.Complete(ctx, who("s-impostor", "DAN@example.com", true), "")
		if domain.CodeOf(err) != domain.CodeIdentityMismatch {
			t.Fatalf("got %v", err)
		}
		// The binding, not the email, identifies a returning user:
		// it still works after the registry email changes.
		res, err := f.signIn.Complete(ctx, who("s-dan", "dan@new.example", false), "")
		if err != nil || res.User.Email != "dan@example.com" {
			t.Fatalf("returning user: %+v %v", res.User, err)
		}
	})

	t.Run("license is checked on completion too", func(t *testing.T) {
		f := newSignInFixture(t)
		f.invite(t, "eve@example.com", domain.RoleMember)
		f.lic.set(func(l *fakeLicense) { l.info.ManagedIdentity = false })
		_, err := f.signIn.Complete(ctx, who("s-eve", "eve@example.com", true), "")
		if domain.CodeOf(err) != domain.CodeManagedIdentityDisabled {
			t.Fatalf("got %v", err)
		}
	})
}
