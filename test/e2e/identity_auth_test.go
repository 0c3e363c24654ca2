package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// exchange turns key into a session; it returns the session cookie.
func exchange(t *testing.T, e *enginetest.Engine, key string) *http.Cookie {
	t.Helper()
	resp, body := e.Do(t, http.MethodPost, "/auth/api-key/exchange", "", map[string]any{"api_key": key})
	wantStatus(t, resp, body, http.StatusOK)
	for _, c := range resp.Cookies() {
		if c.Name == "threadengine_session" {
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
				t.Fatalf("cookie attributes: %+v", c)
			}
			return c
		}
	}
	t.Fatalf("no session cookie: %v", resp.Header)
	return nil
}

func withCookie(c *http.Cookie, origin string) func(*http.Request) {
	return func(r *http.Request) {
		r.AddCookie(c)
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
	}
}

func sessionInfo(t *testing.T, e *enginetest.Engine, c *http.Cookie) map[string]any {
	t.Helper()
	resp, body := e.DoWith(t, http.MethodGet, "/auth/session", nil, withCookie(c, ""))
	wantStatus(t, resp, body, http.StatusOK)
	return decode[map[string]any](t, body)
}

func TestSessionsFromKeys(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		ck := exchange(t, e, e.AdminKey)
		info := sessionInfo(t, e, ck)
		if info["authenticated"] != true || info["subject_kind"] != "user" {
			t.Fatalf("session: %v", info)
		}
		if u := info["user"].(map[string]any); u["role"] != "admin" || u["email"] != "owner@example.com" {
			t.Fatalf("session user: %v", info)
		}
		// cookie GET works; cookie POST needs the Origin
		resp, body := e.DoWith(t, http.MethodGet, "/v1/users", nil, withCookie(ck, ""))
		wantStatus(t, resp, body, http.StatusOK)
		invite := map[string]any{"email": "c@example.com", "role": "viewer"}
		resp, body = e.DoWith(t, http.MethodPost, "/v1/users", invite, withCookie(ck, ""))
		wantProblem(t, resp, body, http.StatusForbidden, "origin_denied")
		resp, body = e.DoWith(t, http.MethodPost, "/v1/users", invite, withCookie(ck, "https://evil.example"))
		wantProblem(t, resp, body, http.StatusForbidden, "origin_denied")
		resp, body = e.DoWith(t, http.MethodPost, "/v1/users", invite, withCookie(ck, e.URL))
		wantStatus(t, resp, body, http.StatusCreated)
		// a header credential wins over the cookie (and needs no Origin)
		_, viewerKey := e.NewUser(t, domain.RoleViewer)
		resp, body = e.DoWith(t, http.MethodPost, "/v1/users", map[string]any{"email": "d@example.com", "role": "viewer"}, func(r *http.Request) {
			r.AddCookie(ck)
			r.Header.Set("Authorization", "Bearer "+viewerKey)
		})
		wantProblem(t, resp, body, http.StatusForbidden, "forbidden")
		// X-API-Key works; both headers are ambiguous
		resp, body = e.DoWith(t, http.MethodGet, "/v1/users", nil, func(r *http.Request) { r.Header.Set("X-API-Key", e.AdminKey) })
		wantStatus(t, resp, body, http.StatusOK)
		resp, body = e.DoWith(t, http.MethodGet, "/v1/users", nil, func(r *http.Request) {
			r.Header.Set("X-API-Key", e.AdminKey)
			r.Header.Set("Authorization", "Bearer "+e.AdminKey)
		})
		wantProblem(t, resp, body, http.StatusUnauthorized, "unauthenticated")

		// expiry after 8h
		e.Clock.Advance(8*time.Hour + time.Second)
		resp, body = e.DoWith(t, http.MethodGet, "/v1/users", nil, withCookie(ck, ""))
		wantProblem(t, resp, body, http.StatusUnauthorized, "session_expired")
		if info := sessionInfo(t, e, ck); info["authenticated"] != false {
			t.Fatalf("expired session still authenticated: %v", info)
		}
	})
}

func TestKeyRevocationEndsSessions(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, memberKey := e.NewUser(t, domain.RoleMember)
		// member creates a second personal key, exchanges it, then revokes it
		resp, body := e.Do(t, http.MethodPost, "/v1/api-keys", memberKey, map[string]any{"name": "laptop", "expires_in_days": 30})
		wantStatus(t, resp, body, http.StatusCreated)
		created := decode[struct {
			Key    string         `json:"key"`
			APIKey map[string]any `json:"api_key"`
		}](t, body)
		if !strings.HasPrefix(created.Key, "td_") || created.APIKey["kind"] != "personal" || created.APIKey["expires_at"] == nil {
			t.Fatalf("create: %s", body)
		}
		id := created.APIKey["id"].(string)
		ck := exchange(t, e, created.Key)
		resp, body = e.DoWith(t, http.MethodGet, "/v1/api-keys", nil, withCookie(ck, ""))
		wantStatus(t, resp, body, http.StatusOK)
		if strings.Contains(string(body), created.Key) {
			t.Fatal("list shows the plaintext key")
		}
		// the member sees only own keys (2); the admin sees all
		if n := len(decode[struct {
			APIKeys []any `json:"api_keys"`
		}](t, body).APIKeys); n != 2 {
			t.Fatalf("member sees %d keys: %s", n, body)
		}
		// a viewer cannot revoke someone else's key
		_, viewerKey := e.NewUser(t, domain.RoleViewer)
		resp, body = e.Do(t, http.MethodDelete, "/v1/api-keys/"+id, viewerKey, nil)
		wantProblem(t, resp, body, http.StatusNotFound, "not_found")

		resp, body = e.Do(t, http.MethodDelete, "/v1/api-keys/"+id, memberKey, nil)
		wantStatus(t, resp, body, http.StatusOK)
		resp, body = e.DoWith(t, http.MethodGet, "/v1/users", nil, withCookie(ck, ""))
		wantProblem(t, resp, body, http.StatusUnauthorized, "session_revoked")
		resp, body = e.Do(t, http.MethodGet, "/v1/users", created.Key, nil)
		wantProblem(t, resp, body, http.StatusUnauthorized, "api_key_revoked")
		// the member's other key still works
		resp, body = e.Do(t, http.MethodGet, "/v1/users", memberKey, nil)
		wantStatus(t, resp, body, http.StatusOK)
	})
}

func TestServiceAccountKeys(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, memberKey := e.NewUser(t, domain.RoleMember)
		sa := map[string]any{"name": "ingest", "create_service_account": map[string]any{"name": "ingest-bot", "role": "member"}}
		resp, body := e.Do(t, http.MethodPost, "/v1/api-keys", memberKey, sa)
		wantProblem(t, resp, body, http.StatusForbidden, "forbidden")
		resp, body = e.Do(t, http.MethodPost, "/v1/api-keys", e.AdminKey, map[string]any{"name": "x", "create_service_account": map[string]any{"name": "root-bot", "role": "admin"}})
		wantProblem(t, resp, body, http.StatusBadRequest, "validation_failed")

		resp, body = e.Do(t, http.MethodPost, "/v1/api-keys", e.AdminKey, sa)
		wantStatus(t, resp, body, http.StatusCreated)
		created := decode[struct {
			Key    string         `json:"key"`
			APIKey map[string]any `json:"api_key"`
		}](t, body)
		if created.APIKey["kind"] != "service_account" || created.APIKey["service_account_id"] == nil {
			t.Fatalf("create: %s", body)
		}
		// the exchanged session stays a service account
		ck := exchange(t, e, created.Key)
		info := sessionInfo(t, e, ck)
		if info["subject_kind"] != "service_account" {
			t.Fatalf("session: %v", info)
		}
		// a second key for the same account
		resp, body = e.Do(t, http.MethodPost, "/v1/api-keys", e.AdminKey, map[string]any{"name": "ingest-2", "service_account_id": created.APIKey["service_account_id"]})
		wantStatus(t, resp, body, http.StatusCreated)
		// service accounts have no personal keys
		resp, body = e.Do(t, http.MethodPost, "/v1/api-keys", created.Key, map[string]any{"name": "mine"})
		wantProblem(t, resp, body, http.StatusForbidden, "forbidden")
		// bad expiry
		resp, body = e.Do(t, http.MethodPost, "/v1/api-keys", e.AdminKey, map[string]any{"name": "old", "expires_at": "2001-01-01T00:00:00Z"})
		if p := wantProblem(t, resp, body, http.StatusBadRequest, "validation_failed"); p.Field != "expires_at" {
			t.Fatalf("field %q", p.Field)
		}
	})
}

func TestUserStatusGatesCredentials(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		u, key := e.NewUser(t, domain.RoleMember)
		ck := exchange(t, e, key)
		// suspended: key and session refused
		resp, body := patchUser(t, e, e.AdminKey, u.ID, map[string]any{"status": "suspended"})
		wantStatus(t, resp, body, http.StatusOK)
		resp, body = e.Do(t, http.MethodGet, "/v1/users", key, nil)
		wantProblem(t, resp, body, http.StatusUnauthorized, "user_not_active")
		resp, body = e.DoWith(t, http.MethodGet, "/v1/users", nil, withCookie(ck, ""))
		wantProblem(t, resp, body, http.StatusUnauthorized, "session_revoked")
		resp, body = e.Do(t, http.MethodPost, "/auth/api-key/exchange", "", map[string]any{"api_key": key})
		wantProblem(t, resp, body, http.StatusUnauthorized, "user_not_active")
		// reactivated: the key works again; the old session does not
		resp, body = patchUser(t, e, e.AdminKey, u.ID, map[string]any{"status": "active"})
		wantStatus(t, resp, body, http.StatusOK)
		resp, body = e.Do(t, http.MethodGet, "/v1/users", key, nil)
		wantStatus(t, resp, body, http.StatusOK)
		resp, body = e.DoWith(t, http.MethodGet, "/v1/users", nil, withCookie(ck, ""))
		wantProblem(t, resp, body, http.StatusUnauthorized, "session_revoked")
		// a role change takes effect on the next request and ends sessions
		ck = exchange(t, e, key)
		resp, body = patchUser(t, e, e.AdminKey, u.ID, map[string]any{"role": "viewer"})
		wantStatus(t, resp, body, http.StatusOK)
		resp, body = e.Do(t, http.MethodGet, "/auth/session", key, nil)
		wantStatus(t, resp, body, http.StatusOK)
		if info := decode[map[string]any](t, body); info["user"].(map[string]any)["role"] != "viewer" {
			t.Fatalf("role not fresh: %s", body)
		}
		resp, body = e.DoWith(t, http.MethodGet, "/v1/users", nil, withCookie(ck, ""))
		wantProblem(t, resp, body, http.StatusUnauthorized, "session_revoked")
		// archived: personal keys revoked for good
		resp, body = patchUser(t, e, e.AdminKey, u.ID, map[string]any{"status": "archived"})
		wantStatus(t, resp, body, http.StatusOK)
		resp, body = e.Do(t, http.MethodGet, "/v1/users", key, nil)
		wantProblem(t, resp, body, http.StatusUnauthorized, "api_key_revoked")

		// invited: a personal key does not work
		inv := e.InviteUser(t, "pending@example.com", domain.RoleMember)
		invKey := e.NewKeyFor(t, inv)
		resp, body = e.Do(t, http.MethodGet, "/v1/users", invKey, nil)
		wantProblem(t, resp, body, http.StatusUnauthorized, "user_not_active")
	})
}

func TestExchangeAndLogout(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		resp, body := e.Do(t, http.MethodPost, "/auth/api-key/exchange", "", map[string]any{"api_key": e.AdminKey, "license_key": "x"})
		wantProblem(t, resp, body, http.StatusBadRequest, "validation_failed")
		resp, body = e.Do(t, http.MethodPost, "/auth/api-key/exchange", "", map[string]any{"api_key": "td_wrong"})
		wantProblem(t, resp, body, http.StatusUnauthorized, "unauthenticated")
		resp, body = e.DoWith(t, http.MethodPost, "/auth/api-key/exchange", map[string]any{"api_key": e.AdminKey}, func(r *http.Request) {
			r.Header.Set("Origin", "https://evil.example")
		})
		wantProblem(t, resp, body, http.StatusForbidden, "origin_denied")
		// license exchange is off without registry.license_key
		resp, body = e.Do(t, http.MethodPost, "/auth/api-key/exchange", "", map[string]any{"license_key": "anything"})
		wantProblem(t, resp, body, http.StatusUnauthorized, "unauthenticated")

		ck := exchange(t, e, e.AdminKey)
		// logout by cookie needs the Origin
		resp, body = e.DoWith(t, http.MethodPost, "/auth/logout", nil, withCookie(ck, ""))
		wantProblem(t, resp, body, http.StatusForbidden, "origin_denied")
		resp, body = e.DoWith(t, http.MethodPost, "/auth/logout", nil, withCookie(ck, e.URL))
		wantStatus(t, resp, body, http.StatusOK)
		if out := decode[map[string]any](t, body); out["status"] != "logged_out" {
			t.Fatalf("logout: %s", body)
		}
		if info := sessionInfo(t, e, ck); info["authenticated"] != false {
			t.Fatalf("session survives logout: %v", info)
		}
		// HTML form logout redirects to /login
		ck = exchange(t, e, e.AdminKey)
		noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		req, _ := http.NewRequest(http.MethodPost, e.URL+"/auth/logout", strings.NewReader(""))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", e.URL)
		req.AddCookie(ck)
		r2, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r2.Body.Close()
		if r2.StatusCode != http.StatusSeeOther || r2.Header.Get("Location") != e.URL+"/login" {
			t.Fatalf("form logout: %d %s", r2.StatusCode, r2.Header.Get("Location"))
		}
	})
}

func TestLicenseExchange(t *testing.T) {
	t.Parallel()
	forEachDialectD(t, func(t *testing.T, d sqldb.Dialect) {
		e := enginetest.Start(t, d, enginetest.WithConfig(func(c *config.Config) { c.Registry.LicenseKey = "lic-0123456789" }))
		resp, body := e.Do(t, http.MethodPost, "/auth/api-key/exchange", "", map[string]any{"license_key": "lic-wrong"})
		wantProblem(t, resp, body, http.StatusUnauthorized, "unauthenticated")
		resp, body = e.Do(t, http.MethodPost, "/auth/api-key/exchange", "", map[string]any{"license_key": "lic-0123456789"})
		wantStatus(t, resp, body, http.StatusOK)
		out := decode[map[string]any](t, body)
		if out["user"].(map[string]any)["id"] != e.Admin.ID {
			t.Fatalf("license session is not the owner: %s", body)
		}
	})
}

func TestMetricsAndHealth(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		e.Do(t, http.MethodGet, "/v1/users", e.AdminKey, nil)
		resp, body := e.Do(t, http.MethodGet, "/metrics", "", nil)
		wantStatus(t, resp, body, http.StatusOK)
		if !strings.Contains(string(body), `threadengine_http_requests_total{method="GET",route="/v1/users",status="200"}`) || !strings.Contains(string(body), "go_goroutines") {
			t.Fatalf("metrics lack request counts or runtime metrics")
		}
		resp, body = e.Do(t, http.MethodGet, "/readyz", "", nil)
		wantStatus(t, resp, body, http.StatusOK)
	})
}

// TestExchangeThrottlesFailures: 20 failed exchanges a minute per (address,
// key prefix), then 429 with Retry-After for further failures — but a valid
// key from the same address is never refused.
func TestExchangeThrottlesFailures(t *testing.T) {
	t.Parallel()
	e := enginetest.Start(t, sqldb.SQLite)
	guess := "td_guessguessguessguessguessguessguessguessgu"
	for i := 0; i < 20; i++ {
		resp, body := e.Do(t, http.MethodPost, "/auth/api-key/exchange", "", map[string]any{"api_key": guess})
		wantProblem(t, resp, body, http.StatusUnauthorized, "unauthenticated")
	}
	resp, body := e.Do(t, http.MethodPost, "/auth/api-key/exchange", "", map[string]any{"api_key": guess})
	wantProblem(t, resp, body, http.StatusTooManyRequests, "rate_limited")
	if resp.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	resp, body = e.Do(t, http.MethodPost, "/auth/api-key/exchange", "", map[string]any{"api_key": e.AdminKey})
	wantStatus(t, resp, body, http.StatusOK)
	// Another key's failures from this address are still plain 401s.
	resp, body = e.Do(t, http.MethodPost, "/auth/api-key/exchange", "", map[string]any{"api_key": "td_other"})
	wantProblem(t, resp, body, http.StatusUnauthorized, "unauthenticated")
	// other routes are not affected
	resp, body = e.Do(t, http.MethodGet, "/v1/users", e.AdminKey, nil)
	wantStatus(t, resp, body, http.StatusOK)
}
