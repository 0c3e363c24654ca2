package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// TestLicenseExchangeBootstrapsOwner: on a fresh installation, exchanging the
// configured license key creates the registry's license owner as an active
// admin and signs them in, so the install is usable without a browser flow.
func TestLicenseExchangeBootstrapsOwner(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t)
	forEachDialectD(t, func(t *testing.T, d sqldb.Dialect) {
		e := enginetest.Start(t, d, enginetest.WithoutOwner(), enginetest.WithConfig(func(c *config.Config) {
			c.Registry.URL = reg.Issuer()
			c.Registry.ClientID = regClientID
			c.Registry.ClientSecret = regClientSecret
			c.Registry.LicenseKey = "lic-good"
		}))
		ctx := context.Background()
		if n, _ := e.Server.Store.CountUsers(ctx); n != 0 {
			t.Fatalf("fresh install has %d users", n)
		}
		resp, body := e.Do(t, http.MethodPost, "/auth/api-key/exchange", "", map[string]any{"license_key": "lic-wrong"})
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong license key: %d %s", resp.StatusCode, body)
		}
		if n, _ := e.Server.Store.CountUsers(ctx); n != 0 {
			t.Fatalf("a refused exchange created %d users", n)
		}
		resp, body = e.Do(t, http.MethodPost, "/auth/api-key/exchange", "", map[string]any{"license_key": "lic-good"})
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), licOwner) {
			t.Fatalf("license exchange: %d %s", resp.StatusCode, body)
		}
		var session string
		for _, c := range resp.Cookies() {
			if c.Name == "threadengine_session" && c.HttpOnly {
				session = c.Value
			}
		}
		if session == "" {
			t.Fatal("no HttpOnly session cookie from the license exchange")
		}
		owner, err := e.Server.Store.GetUserByEmail(ctx, licOwner)
		if err != nil || owner.Role != domain.RoleAdmin || owner.Status != domain.StatusActive {
			t.Fatalf("owner after exchange: %+v %v", owner, err)
		}
		// A second exchange signs the same owner in again, creating nobody.
		resp, _ = e.Do(t, http.MethodPost, "/auth/api-key/exchange", "", map[string]any{"license_key": "lic-good"})
		if n, _ := e.Server.Store.CountUsers(ctx); resp.StatusCode != http.StatusOK || n != 1 {
			t.Fatalf("second exchange: %d, users %d", resp.StatusCode, n)
		}
	})
}
