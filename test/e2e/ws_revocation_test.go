package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// TestWithdrawnCredentialsCloseSockets is issue 14 point 9: suspending or
// archiving a user, or revoking the key a socket connected with, closes the
// open sockets within 1 s (1008), not at the next 30 s re-check.
func TestWithdrawnCredentialsCloseSockets(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		withdraw := map[string]func(u domain.User, keyID string) (*http.Response, []byte){
			"suspended": func(u domain.User, _ string) (*http.Response, []byte) {
				return e.Do(t, http.MethodPatch, "/v1/users/"+u.ID, e.AdminKey, map[string]any{"status": "suspended"})
			},
			"archived": func(u domain.User, _ string) (*http.Response, []byte) {
				return e.Do(t, http.MethodPatch, "/v1/users/"+u.ID, e.AdminKey, map[string]any{"status": "archived"})
			},
			"key revoked": func(_ domain.User, keyID string) (*http.Response, []byte) {
				return e.Do(t, http.MethodDelete, "/v1/api-keys/"+keyID, e.AdminKey, nil)
			},
		}
		for name, fn := range withdraw {
			u, key := e.NewUser(t, domain.RoleMember)
			_, otherKey := e.NewUser(t, domain.RoleMember)
			keyID := ""
			if k, err := e.Server.Identity.Application().Queries.AuthenticateAPIKey.Handle(context.Background(), key); err == nil {
				keyID = k.KeyID
			}
			c := connectWS(t, e, key)
			bystander := connectWS(t, e, otherKey)
			t0 := time.Now()
			resp, body := fn(u, keyID)
			wantStatus(t, resp, body, http.StatusOK)
			select {
			case <-c.closed:
			case <-time.After(5 * time.Second):
			}
			d := time.Since(t0)
			if d > time.Second {
				t.Fatalf("%s: socket still open %v after the change", name, d)
			}
			if got := c.closeStatus(); got != websocket.StatusPolicyViolation {
				t.Errorf("%s: socket closed with %v after %v, want 1008 within 1 s", name, got, d)
			}
			// Other principals' sockets stay open.
			bystander.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})
		}
	})
}
