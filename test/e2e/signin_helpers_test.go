package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/devregistry"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/test/enginetest"
)

const (
	regClientID     = "threadengine"
	regClientSecret = "test-client-secret"
	licOwner        = "licensee@example.com"
	regPassword     = "correct horse battery"
)

// startRegistry runs a real devregistry on loopback. Its client accepts any
// loopback engine port, since every test engine gets a fresh one.
func startRegistry(t *testing.T) *devregistry.Registry {
	t.Helper()
	cfg := devregistry.Config{
		Clients: []devregistry.Client{{
			ID: regClientID, Secret: regClientSecret,
			RedirectURIGlobs:           []string{"http://127.0.0.1:*/auth/callback"},
			PostLogoutRedirectURIGlobs: []string{"http://127.0.0.1:*/login"},
		}},
		Licenses: []devregistry.License{{
			Key: "lic-good", Account: "acme", OwnerEmail: licOwner,
			Products: []string{"threadengine"}, ManagedIdentity: true,
		}},
	}
	for _, u := range []struct {
		email    string
		verified bool
	}{
		{licOwner, true}, {"invitee@example.com", true}, {"carol@EXAMPLE.com", true},
		{"stranger@example.com", true}, {"unverified@example.com", false},
		{"sam@example.com", true}, {"archie@example.com", true},
	} {
		cfg.Users = append(cfg.Users, devregistry.User{Email: u.email, EmailVerified: u.verified, Password: regPassword, Name: "Test Person"})
	}
	reg, err := devregistry.Start("127.0.0.1:0", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	return reg
}

// startSignInEngine starts an engine pointed at reg with licenseKey.
func startSignInEngine(t *testing.T, d sqldb.Dialect, reg *devregistry.Registry, licenseKey string, interval time.Duration) *enginetest.Engine {
	t.Helper()
	return enginetest.Start(t, d, enginetest.WithConfig(func(c *config.Config) {
		c.Registry.URL = reg.Issuer()
		c.Registry.ClientID = regClientID
		c.Registry.ClientSecret = regClientSecret
		c.Registry.LicenseKey = licenseKey
		c.Registry.Product = "threadengine"
		if interval > 0 {
			c.Registry.CheckInterval = interval
		}
	}))
}

// browser is an http.Client with a cookie jar that follows redirects, like a
// browser without JavaScript.
type browser struct {
	*http.Client
	t *testing.T
}

func newBrowser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{Client: &http.Client{Jar: jar, Timeout: 20 * time.Second}, t: t}
}

func (b *browser) get(rawURL string) (*http.Response, string) {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, rawURL, nil)
	req.Header.Set("Accept", "text/html")
	return b.do(req)
}

func (b *browser) do(req *http.Request) (*http.Response, string) {
	b.t.Helper()
	resp, err := b.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

var authRequestIDRe = regexp.MustCompile(`name="authRequestID" value="([^"]+)"`)

// signIn drives the whole flow: engine /auth/login → registry login page →
// post the registry's form → registry callback → engine /auth/callback →
// final page. It returns the final URL. When the engine refuses before the
// registry (license rules) there is no form and the /login URL is returned.
func (b *browser) signIn(e *enginetest.Engine, email, password string) *url.URL {
	b.t.Helper()
	return b.signInAt(e, "/auth/login", email, password)
}

// signInAt is signIn starting from start (say "/auth/login?next=...").
func (b *browser) signInAt(e *enginetest.Engine, start, email, password string) *url.URL {
	b.t.Helper()
	resp, body := b.get(e.URL + start)
	if strings.HasPrefix(resp.Request.URL.String(), e.URL) {
		return resp.Request.URL
	}
	m := authRequestIDRe.FindStringSubmatch(body)
	if resp.StatusCode != http.StatusOK || m == nil {
		b.t.Fatalf("registry login page: %d %s", resp.StatusCode, body)
	}
	loginURL := resp.Request.URL.Scheme + "://" + resp.Request.URL.Host + "/login"
	form := url.Values{"authRequestID": {m[1]}, "email": {email}, "password": {password}}
	req, _ := http.NewRequest(http.MethodPost, loginURL, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "text/html")
	resp, body = b.do(req)
	if !strings.HasPrefix(resp.Request.URL.String(), e.URL) {
		b.t.Fatalf("did not come back to the engine: %s %d %s", resp.Request.URL, resp.StatusCode, body)
	}
	return resp.Request.URL
}

type sessionBody struct {
	Authenticated bool `json:"authenticated"`
	User          struct {
		ID    string `json:"id"`
		Email string `json:"email"`
		Role  string `json:"role"`
	} `json:"user"`
}

func (b *browser) session(e *enginetest.Engine) sessionBody {
	b.t.Helper()
	resp, body := b.get(e.URL + "/auth/session")
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("GET /auth/session: %d %s", resp.StatusCode, body)
	}
	var s sessionBody
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		b.t.Fatalf("session body %s: %v", body, err)
	}
	return s
}

// wantSignedIn checks the flow ended on the engine with a session for email.
func wantSignedIn(t *testing.T, b *browser, e *enginetest.Engine, final *url.URL, email string) sessionBody {
	t.Helper()
	if final.Query().Get("error") != "" {
		t.Fatalf("sign-in of %s refused: %s", email, final)
	}
	s := b.session(e)
	if !s.Authenticated || !strings.EqualFold(s.User.Email, email) {
		t.Fatalf("session after sign-in of %s: %+v", email, s)
	}
	return s
}

// wantRefused checks the flow ended on /login?error=code with no session.
func wantRefused(t *testing.T, b *browser, e *enginetest.Engine, final *url.URL, code string) {
	t.Helper()
	if final.Path != "/login" || final.Query().Get("error") != code {
		t.Fatalf("final URL %s, want /login?error=%s", final, code)
	}
	if s := b.session(e); s.Authenticated {
		t.Fatalf("refused sign-in left a session: %+v", s)
	}
}

func hasBinding(t *testing.T, e *enginetest.Engine, userID string) bool {
	t.Helper()
	_, err := e.Server.Store.GetBindingByUser(context.Background(), userID)
	return err == nil
}
