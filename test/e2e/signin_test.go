package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/devregistry"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// TestSignInOwnerAndInvited covers the owner's first sign-in (created as an
// active admin), invitation activation with a case-insensitive email match,
// and a returning user coming back through the identity binding.
func TestSignInOwnerAndInvited(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t)
	forEachDialectD(t, func(t *testing.T, d sqldb.Dialect) {
		e := startSignInEngine(t, d, reg, "lic-good", 0)
		ctx := context.Background()

		// The license owner has no engine user yet: the first sign-in creates it.
		if _, err := e.Server.Store.GetUserByEmail(ctx, licOwner); domain.KindOf(err) != domain.KindNotFound {
			t.Fatalf("owner exists before sign-in: %v", err)
		}
		b := newBrowser(t)
		s := wantSignedIn(t, b, e, b.signIn(e, licOwner, regPassword), licOwner)
		if s.User.Role != "admin" {
			t.Fatalf("owner role %q, want admin", s.User.Role)
		}
		owner, err := e.Server.Store.GetUserByEmail(ctx, licOwner)
		if err != nil || owner.Status != domain.StatusActive || owner.Role != domain.RoleAdmin || !owner.EmailVerified {
			t.Fatalf("owner after sign-in: %+v %v", owner, err)
		}
		if !hasBinding(t, e, owner.ID) {
			t.Fatal("owner has no identity binding")
		}
		// The session cookie is HttpOnly and lasts eight hours.
		resp, _ := b.get(e.URL + "/auth/session")
		_ = resp
		u, _ := url.Parse(e.URL)
		var found bool
		for _, c := range b.Jar.Cookies(u) {
			if c.Name == "threadengine_session" {
				found = true
			}
		}
		if !found {
			t.Fatal("no session cookie")
		}

		// Invited user: the registry's verified email matches case-insensitively.
		carol := e.InviteUser(t, "Carol@Example.com", domain.RoleMember)
		if carol.Status != domain.StatusInvited {
			t.Fatalf("carol %+v", carol)
		}
		b2 := newBrowser(t)
		s = wantSignedIn(t, b2, e, b2.signIn(e, "carol@EXAMPLE.com", regPassword), "carol@example.com")
		if s.User.Role != "member" || s.User.ID != carol.ID {
			t.Fatalf("carol session %+v", s)
		}
		carol, _ = e.Server.Store.GetUser(ctx, carol.ID)
		if carol.Status != domain.StatusActive || carol.ActivatedAt == nil || !hasBinding(t, e, carol.ID) {
			t.Fatalf("carol after first sign-in: %+v", carol)
		}
		bind, err := e.Server.Store.GetBindingByUser(ctx, carol.ID)
		if err != nil || bind.Issuer != reg.Issuer() || bind.Subject != devregistry.SubjectFor("carol@example.com") || !bind.Active {
			t.Fatalf("binding %+v %v", bind, err)
		}

		// Returning user: a new browser signs in again through the binding.
		b3 := newBrowser(t)
		wantSignedIn(t, b3, e, b3.signIn(e, "carol@example.com", regPassword), "carol@example.com")

		// A wrong password on the registry never reaches the engine.
		b4 := newBrowser(t)
		resp, body := b4.get(e.URL + "/auth/login")
		m := authRequestIDRe.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no registry form: %d", resp.StatusCode)
		}
		form := url.Values{"authRequestID": {m[1]}, "email": {"carol@example.com"}, "password": {"wrong"}}
		r, _ := http.NewRequest(http.MethodPost, reg.Issuer()+"/login", strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, body = b4.do(r)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "Wrong email or password") {
			t.Fatalf("wrong password: %d %s", resp.StatusCode, body)
		}
	})
}

// TestSignInRefusals covers every refusal that depends on the person.
func TestSignInRefusals(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t)
	e := startSignInEngine(t, sqldb.SQLite, reg, "lic-good", 0)
	ctx := context.Background()

	t.Run("not invited", func(t *testing.T) {
		b := newBrowser(t)
		wantRefused(t, b, e, b.signIn(e, "stranger@example.com", regPassword), "not_invited")
		if _, err := e.Server.Store.GetUserByEmail(ctx, "stranger@example.com"); domain.KindOf(err) != domain.KindNotFound {
			t.Fatalf("a refused stranger got a user: %v", err)
		}
	})
	t.Run("email mismatch", func(t *testing.T) {
		// Invited as invitee@other.example, but the registry says invitee@example.com.
		u := e.InviteUser(t, "invitee@other.example", domain.RoleViewer)
		b := newBrowser(t)
		wantRefused(t, b, e, b.signIn(e, "invitee@example.com", regPassword), "not_invited")
		u, _ = e.Server.Store.GetUser(ctx, u.ID)
		if u.Status != domain.StatusInvited || hasBinding(t, e, u.ID) {
			t.Fatalf("mismatched invitation changed: %+v", u)
		}
	})
	t.Run("unverified email", func(t *testing.T) {
		u := e.InviteUser(t, "unverified@example.com", domain.RoleMember)
		b := newBrowser(t)
		wantRefused(t, b, e, b.signIn(e, "unverified@example.com", regPassword), "email_not_verified")
		u, _ = e.Server.Store.GetUser(ctx, u.ID)
		if u.Status != domain.StatusInvited || u.EmailVerified || hasBinding(t, e, u.ID) {
			t.Fatalf("unverified sign-in activated something: %+v", u)
		}
	})
	t.Run("suspended", func(t *testing.T) {
		u := e.InviteUser(t, "sam@example.com", domain.RoleMember)
		b := newBrowser(t)
		wantSignedIn(t, b, e, b.signIn(e, "sam@example.com", regPassword), "sam@example.com")
		resp, body := patchUser(t, e, e.AdminKey, u.ID, map[string]any{"status": "suspended"})
		wantStatus(t, resp, body, http.StatusOK)
		// The suspension ended the session, and a new sign-in is refused.
		if s := b.session(e); s.Authenticated {
			t.Fatalf("suspended user still has a session: %+v", s)
		}
		b2 := newBrowser(t)
		wantRefused(t, b2, e, b2.signIn(e, "sam@example.com", regPassword), "user_not_active")
	})
	t.Run("archived", func(t *testing.T) {
		u := e.InviteUser(t, "archie@example.com", domain.RoleMember)
		resp, body := patchUser(t, e, e.AdminKey, u.ID, map[string]any{"status": "archived"})
		wantStatus(t, resp, body, http.StatusOK)
		b := newBrowser(t)
		wantRefused(t, b, e, b.signIn(e, "archie@example.com", regPassword), "user_not_active")
		u, _ = e.Server.Store.GetUser(ctx, u.ID)
		if u.Status != domain.StatusArchived || hasBinding(t, e, u.ID) {
			t.Fatalf("archived user changed: %+v", u)
		}
	})
	t.Run("stale login cookie", func(t *testing.T) {
		// A callback without the login cookie (another browser, or replay) is refused.
		b := newBrowser(t)
		resp, _ := b.get(e.URL + "/auth/callback?code=x&state=y")
		if resp.Request.URL.Query().Get("error") != "login_expired" {
			t.Fatalf("callback without cookie ended at %s", resp.Request.URL)
		}
	})
}

// TestSignInNext shows /auth/login?next= carried through the registry round
// trip (in the login cookie) to the page the person was going to, and that
// anything but a same-site path lands on the home page instead.
func TestSignInNext(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t)
	e := startSignInEngine(t, sqldb.SQLite, reg, "lic-good", 0)
	e.InviteUser(t, "invitee@example.com", domain.RoleMember)

	b := newBrowser(t)
	final := b.signInAt(e, "/auth/login?next="+url.QueryEscape("/ui/threads?ref=ORD-1"), "invitee@example.com", regPassword)
	wantSignedIn(t, b, e, final, "invitee@example.com")
	if final.Path != "/ui/threads" || final.RawQuery != "ref=ORD-1" {
		t.Fatalf("after sign-in with next: %s, want /ui/threads?ref=ORD-1", final)
	}

	for _, next := range []string{"//evil.example/x", `/\evil.example`, "https://evil.example/", "/\t/evil.example"} {
		b := newBrowser(t)
		final := b.signInAt(e, "/auth/login?next="+url.QueryEscape(next), "invitee@example.com", regPassword)
		wantSignedIn(t, b, e, final, "invitee@example.com")
		if final.String() != e.URL+"/" {
			t.Fatalf("next=%q ended at %s, want %s/", next, final, e.URL)
		}
	}

	// A refusal keeps next on the /login link, so another way of signing
	// in from there still ends at the same page.
	b = newBrowser(t)
	final = b.signInAt(e, "/auth/login?next=%2Fui%2Fusers", "stranger@example.com", regPassword)
	if final.Path != "/login" || final.Query().Get("error") != "not_invited" || final.Query().Get("next") != "/ui/users" {
		t.Fatalf("refused sign-in ended at %s", final)
	}
	_, page := b.get(final.String())
	if !strings.Contains(page, `data-next="/ui/users"`) {
		t.Fatal("the /login page dropped next after a refusal")
	}
}

// TestSignInLicenseRules covers the license rules: each refusal happens before
// anyone is sent to the registry, is explained on /login (or as JSON), and
// leaves no session.
func TestSignInLicenseRules(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t)
	base := devregistry.License{Account: "acme", OwnerEmail: licOwner, Products: []string{"threadengine"}, ManagedIdentity: true}
	cases := []struct {
		name string
		edit func(*devregistry.License)
		code string
	}{
		{"product not licensed", func(l *devregistry.License) { l.Products = []string{"fused"} }, "product_not_licensed"},
		{"managed identity disabled", func(l *devregistry.License) { l.ManagedIdentity = false }, "managed_identity_disabled"},
		{"license suspended", func(l *devregistry.License) { l.Suspended = true }, "license_suspended"},
		{"unknown license", func(l *devregistry.License) { l.Key = "some-other-key" }, "license_invalid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := base
			l.Key = "lic-" + strings.ReplaceAll(tc.name, " ", "-")
			key := l.Key
			tc.edit(&l)
			reg.PutLicense(l)
			e := startSignInEngine(t, sqldb.SQLite, reg, key, 0)
			b := newBrowser(t)
			wantRefused(t, b, e, b.signIn(e, licOwner, regPassword), tc.code)

			// JSON clients get a problem document.
			resp, body := e.DoWith(t, http.MethodGet, "/auth/login", nil, func(r *http.Request) { r.Header.Set("Accept", "application/json") })
			wantProblem(t, resp, body, http.StatusForbidden, tc.code)

			// The /login page explains the refusal.
			resp, page := b.get(e.URL + "/login?error=" + tc.code)
			if resp.StatusCode != http.StatusOK || !strings.Contains(page, `role="alert"`) || strings.Contains(page, "alert\" hidden") {
				t.Fatalf("login page for %s: %d", tc.code, resp.StatusCode)
			}
		})
	}
}

// TestSignInLicenseSuspendedLater shows the periodic check: a license
// suspended after start blocks new browser sign-ins without deleting data,
// and sign-in works again once the license is restored.
func TestSignInLicenseSuspendedLater(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t)
	l := devregistry.License{Key: "lic-later", Account: "acme", OwnerEmail: licOwner, Products: []string{"threadengine"}, ManagedIdentity: true}
	reg.PutLicense(l)
	e := startSignInEngine(t, sqldb.SQLite, reg, l.Key, time.Second)
	b := newBrowser(t)
	wantSignedIn(t, b, e, b.signIn(e, licOwner, regPassword), licOwner)

	l.Suspended = true
	reg.PutLicense(l)
	pollUntil(t, "the license suspension picked up", func() bool {
		resp, body := e.DoWith(t, http.MethodGet, "/auth/login", nil, func(r *http.Request) { r.Header.Set("Accept", "application/json") })
		if resp.StatusCode == http.StatusForbidden {
			wantProblem(t, resp, body, http.StatusForbidden, "license_suspended")
			return true
		}
		return false
	})
	b2 := newBrowser(t)
	wantRefused(t, b2, e, b2.signIn(e, licOwner, regPassword), "license_suspended")
	if owner, err := e.Server.Store.GetUserByEmail(context.Background(), licOwner); err != nil || owner.Status != domain.StatusActive {
		t.Fatalf("owner after license suspension: %+v %v", owner, err)
	}

	l.Suspended = false
	reg.PutLicense(l)
	b3 := newBrowser(t)
	wantSignedIn(t, b3, e, b3.signIn(e, licOwner, regPassword), licOwner)
}

// TestSignInLogout shows that logout revokes the session and returns the
// provider's end-session URL, which ends the registry session and comes back
// to the engine's /login.
func TestSignInLogout(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t)
	e := startSignInEngine(t, sqldb.SQLite, reg, "lic-good", 0)
	e.InviteUser(t, "invitee@example.com", domain.RoleMember)
	b := newBrowser(t)
	wantSignedIn(t, b, e, b.signIn(e, "invitee@example.com", regPassword), "invitee@example.com")

	req, _ := http.NewRequest(http.MethodPost, e.URL+"/auth/logout", nil)
	req.Header.Set("Origin", e.URL)
	req.Header.Set("Accept", "application/json")
	resp, body := b.do(req)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("logout: %d %s", resp.StatusCode, body)
	}
	var out struct {
		Status    string `json:"status"`
		LogoutURL string `json:"logout_url"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	lu, err := url.Parse(out.LogoutURL)
	if err != nil || out.Status != "logged_out" || !strings.HasPrefix(out.LogoutURL, reg.Issuer()+"/end_session?") {
		t.Fatalf("logout body %s", body)
	}
	if lu.Query().Get("id_token_hint") == "" || lu.Query().Get("post_logout_redirect_uri") != e.URL+"/login" || lu.Query().Get("client_id") != regClientID {
		t.Fatalf("logout URL %s", out.LogoutURL)
	}
	if s := b.session(e); s.Authenticated {
		t.Fatalf("session survived logout: %+v", s)
	}
	resp, _ = b.get(out.LogoutURL)
	if resp.Request.URL.String() != e.URL+"/login" {
		t.Fatalf("end-session ended at %s", resp.Request.URL)
	}
	if n := reg.EndSessionCount(devregistry.SubjectFor("invitee@example.com")); n != 1 {
		t.Fatalf("registry end-session count %d, want 1", n)
	}

	// API-key sessions have no provider session to end.
	key := e.NewKeyFor(t, e.Admin)
	b2 := newBrowser(t)
	ex, _ := http.NewRequest(http.MethodPost, e.URL+"/auth/api-key/exchange", strings.NewReader(`{"api_key":"`+key+`"}`))
	ex.Header.Set("Content-Type", "application/json")
	if resp, body := b2.do(ex); resp.StatusCode != http.StatusOK {
		t.Fatalf("exchange: %d %s", resp.StatusCode, body)
	}
	req, _ = http.NewRequest(http.MethodPost, e.URL+"/auth/logout", nil)
	req.Header.Set("Origin", e.URL)
	resp, body = b2.do(req)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"logout_url":""`) {
		t.Fatalf("api-key session logout: %d %s", resp.StatusCode, body)
	}
}

var _ = enginetest.Start
