package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// twoReplicas starts two engines on one PostgreSQL database, neither with a
// configured hash-chain secret (the first generates it into the database).
func twoReplicas(t *testing.T) (a, b *enginetest.Engine) {
	t.Helper()
	noSecret := enginetest.WithConfig(func(c *config.Config) { c.Security.HashChainSecret = "" })
	a = enginetest.Start(t, sqldb.Postgres, noSecret)
	b = enginetest.Start(t, sqldb.Postgres, noSecret, enginetest.WithDatabase(a.Config.Database.URL), enginetest.WithoutOwner(),
		enginetest.WithClockAt(a.Clock.Now()))
	return a, b
}

// A key revoked on one replica is refused by the other on the very next
// request, and the other's open socket with that key closes on the
// broadcast (well before the periodic re-check could close it).
func TestReplicasRevocationIsImmediate(t *testing.T) {
	t.Parallel()
	a, b := twoReplicas(t)
	_, memberKey := a.NewUser(t, domain.RoleMember)
	resp, body := a.Do(t, http.MethodPost, "/v1/api-keys", memberKey, map[string]any{"name": "second"})
	wantStatus(t, resp, body, http.StatusCreated)
	created := decode[struct {
		Key    string         `json:"key"`
		APIKey map[string]any `json:"api_key"`
	}](t, body)
	// B authenticates the key (and caches it) over HTTP and a socket.
	resp, body = b.Do(t, http.MethodGet, "/v1/users", created.Key, nil)
	wantStatus(t, resp, body, http.StatusOK)
	sock := connectWS(t, b, created.Key)

	resp, body = a.Do(t, http.MethodDelete, "/v1/api-keys/"+created.APIKey["id"].(string), memberKey, nil)
	wantStatus(t, resp, body, http.StatusOK)
	revokedAt := time.Now()
	resp, body = b.Do(t, http.MethodGet, "/v1/users", created.Key, nil)
	wantProblem(t, resp, body, http.StatusUnauthorized, "api_key_revoked")
	select {
	case <-sock.closed:
		t.Logf("socket closed %v after the revocation", time.Since(revokedAt).Round(time.Millisecond))
	case <-time.After(beforeRecheck):
		t.Fatal("socket with the revoked key still open on the other replica")
	}

	// Suspending a user closes its sockets on the other replica too.
	u, key := a.NewUser(t, domain.RoleMember)
	sock = connectWS(t, b, key)
	resp, body = a.Do(t, http.MethodPatch, "/v1/users/"+u.ID, a.AdminKey, map[string]any{"status": "suspended"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("suspend: %d %s", resp.StatusCode, body)
	}
	start := time.Now()
	select {
	case <-sock.closed:
		t.Logf("socket closed %v after the suspension", time.Since(start).Round(time.Millisecond))
	case <-time.After(beforeRecheck):
		t.Fatal("socket of a suspended user still open on the other replica")
	}
	if resp, body := b.Do(t, http.MethodGet, "/v1/users", key, nil); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "user_not_active") {
		t.Fatalf("suspended user's key on B: %d %s", resp.StatusCode, body)
	}
}

// A chain written through one replica verifies on the other, and an
// invitation minted on one is accepted by the other: the installation keys
// are shared through the database.
func TestReplicasShareInstallationKeys(t *testing.T) {
	t.Parallel()
	a, b := twoReplicas(t)
	_, ownerKey := a.NewUser(t, domain.RoleMember)
	_, guestKey := a.NewUser(t, domain.RoleMember)
	w := connectWS(t, b, ownerKey)
	tid := w.ok(map[string]any{"action": "startThread", "label": "shared"})["threadId"].(string)
	for i := 0; i < 3; i++ {
		w.ok(step(tid, fmt.Sprint("s", i), "success", fmt.Sprint("k", i), map[string]any{"i": i}))
	}
	q := fmt.Sprintf(`{ verifyThreadIntegrity(threadId: %q) { verified totalEvents } }`, tid)
	status, r, body := gqlPost(t, a, a.AdminKey, q, nil)
	v, _ := r.Data["verifyThreadIntegrity"].(map[string]any)
	if status != http.StatusOK || v["verified"] != true || v["totalEvents"] != float64(3) {
		t.Fatalf("chain written on B, verified on A: %d %s", status, body)
	}
	token := w.ok(map[string]any{"action": "inviteParty", "role": "supplier", "accessLevel": "observer"})["threadToken"].(string)
	g := connectWS(t, a, guestKey)
	if r := g.ok(map[string]any{"action": "joinThread", "threadToken": token}); r["threadId"] != tid {
		t.Fatalf("join on A with a token minted on B: %v", r)
	}
}
