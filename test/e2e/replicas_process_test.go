package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/test/enginebin"
	"github.com/threadengine/engine/test/enginetest"
)

// replicaSet is three engine processes on one PostgreSQL database (a fresh
// schema), each with its own data directory and no configured secret.
type replicaSet struct {
	bin      string
	url      string
	env      []string
	addrs    []string
	procs    []*exec.Cmd
	ownerKey string
}

// replicaSets lets one replica set run at a time: three engine processes
// hold about 35 PostgreSQL connections, and two sets beside the package's
// other parallel tests and the rest of go test -p 4 ./... went over
// PostgreSQL's default max_connections (100).
var replicaSets = make(chan struct{}, 1)

func startReplicaSet(t *testing.T, n int) *replicaSet {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the engine binary")
	}
	replicaSets <- struct{}{}
	t.Cleanup(func() { <-replicaSets }) // registered first: runs after the processes stop
	url := sqldbtest.URL(t, sqldb.Postgres)
	bin := enginebin.Path(t)
	rs := &replicaSet{bin: bin, url: url}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "THREADENGINE_") {
			rs.env = append(rs.env, kv)
		}
	}
	// A short redelivery, so the pushes a killed replica leased come back
	// within the test.
	rs.env = append(rs.env, "THREADENGINE_DATABASE__URL="+url, "THREADENGINE_LOG__LEVEL=warn", enginetest.MaxConnsEnv,
		"THREADENGINE_NOTIFICATIONS__REDELIVER_AFTER=2s")
	boot := exec.Command(bin, "bootstrap-owner", "--email", "owner@example.com")
	boot.Env, boot.Dir = rs.env, t.TempDir()
	var stderr bytes.Buffer
	boot.Stderr = &stderr
	out, err := boot.Output()
	if err != nil {
		t.Fatalf("bootstrap-owner: %v: %s", err, stderr.String())
	}
	fields := strings.Fields(strings.TrimSpace(string(out)))
	rs.ownerKey = fields[len(fields)-1]
	for i := 0; i < n; i++ {
		proc, addr := startEngine(t, bin, t.TempDir(), rs.env)
		rs.addrs = append(rs.addrs, addr)
		rs.procs = append(rs.procs, proc)
	}
	return rs
}

// engine is a handle for the test helpers (Do, connectWS) on replica i.
func (rs *replicaSet) engine(i int) *enginetest.Engine {
	return &enginetest.Engine{URL: "http://" + rs.addrs[i], AdminKey: rs.ownerKey}
}

// newKey creates a member service account key through replica i.
func (rs *replicaSet) newKey(t *testing.T, i int, name string) (key, id string) {
	t.Helper()
	e := rs.engine(i)
	resp, body := e.Do(t, http.MethodPost, "/v1/api-keys", rs.ownerKey,
		map[string]any{"name": name, "create_service_account": map[string]any{"name": name + "-bot", "role": "member"}})
	wantStatus(t, resp, body, http.StatusCreated)
	created := decode[struct {
		Key    string         `json:"key"`
		APIKey map[string]any `json:"api_key"`
	}](t, body)
	return created.Key, created.APIKey["id"].(string)
}

// Three engine processes on one database act as one engine.
func TestReplicaSetOfThreeProcesses(t *testing.T) {
	t.Parallel()
	if os.Getenv(sqldbtest.PostgresEnv) == "" {
		t.Skipf("%s not set", sqldbtest.PostgresEnv)
	}
	rs := startReplicaSet(t, 3)
	key, _ := rs.newKey(t, 0, "svc")

	// A subscriber on replica 3 receives steps written on 1 and 2.
	sub := connectWS(t, rs.engine(2), key)
	sub.ok(map[string]any{"action": "subscribe", "requestId": "s", "stepName": "ship", "eventTypes": []string{"step.success"}})
	w1, w2 := connectWS(t, rs.engine(0), key), connectWS(t, rs.engine(1), key)
	tid := w1.ok(map[string]any{"action": "startThread", "label": "spread"})["threadId"].(string)
	w1.ok(step(tid, "ship", "success", "from-1", nil))
	w2.ok(step(tid, "ship", "success", "from-2", nil))
	got := map[string]bool{}
	for i := 0; i < 2; i++ {
		n := sub.push(5 * time.Second)
		got[n["notification"].(map[string]any)["idempotencyKey"].(string)] = true
		sub.send(map[string]any{"action": "ack_notification", "ackToken": n["ackToken"]})
	}
	if !got["from-1"] || !got["from-2"] {
		t.Fatalf("subscriber on replica 3 got %v", got)
	}

	// A chain written on 1 verifies on 3.
	q := fmt.Sprintf(`{ verifyThreadIntegrity(threadId: %q) { verified totalEvents } }`, tid)
	resp, body := rs.engine(2).Do(t, http.MethodPost, "/graphql", rs.ownerKey, map[string]any{"query": q})
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"verified":true`) || !strings.Contains(string(body), `"totalEvents":2`) {
		t.Fatalf("verify on replica 3: %d %s", resp.StatusCode, body)
	}

	// An invitation minted on 1 joins on 3.
	token := w1.ok(map[string]any{"action": "inviteParty", "threadId": tid, "role": "auditor", "accessLevel": "observer"})["threadToken"].(string)
	guestKey, _ := rs.newKey(t, 1, "guest")
	guest := connectWS(t, rs.engine(2), guestKey)
	if r := guest.ok(map[string]any{"action": "joinThread", "threadToken": token}); r["threadId"] != tid {
		t.Fatalf("join on 3: %v", r)
	}

	// Revocation on 2 refuses the key on 1 at the next request (the
	// revocation answers once every replica acknowledged the broadcast)
	// and closes its socket on 1 on the broadcast (before the periodic
	// re-check could).
	doomed, doomedID := rs.newKey(t, 0, "doomed")
	resp, body = rs.engine(0).Do(t, http.MethodGet, "/v1/contracts", doomed, nil)
	wantStatus(t, resp, body, http.StatusOK)
	sock := connectWS(t, rs.engine(0), doomed)
	resp, body = rs.engine(1).Do(t, http.MethodDelete, "/v1/api-keys/"+doomedID, rs.ownerKey, nil)
	wantStatus(t, resp, body, http.StatusOK)
	revoked := time.Now()
	resp, body = rs.engine(0).Do(t, http.MethodGet, "/v1/contracts", doomed, nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("revoked key on replica 1: %d %s", resp.StatusCode, body)
	}
	select {
	case <-sock.closed:
		t.Logf("socket on replica 1 closed %v after the revocation on replica 2", time.Since(revoked).Round(time.Millisecond))
	case <-time.After(beforeRecheck):
		t.Fatal("socket of the revoked key still open on replica 1")
	}
}

// kill -9 of replica 1 during load: no acknowledged step is lost, and its
// subscriber, reconnected to replica 2, receives every notification it had
// not acknowledged (redeliveries carry the same notification id).
func TestReplicaSetKill9(t *testing.T) {
	t.Parallel()
	if os.Getenv(sqldbtest.PostgresEnv) == "" {
		t.Skipf("%s not set", sqldbtest.PostgresEnv)
	}
	rs := startReplicaSet(t, 3)
	key, _ := rs.newKey(t, 0, "svc")
	sub := connectWS(t, rs.engine(0), key)
	sub.ok(map[string]any{"action": "subscribe", "requestId": "s", "stepName": "load", "eventTypes": []string{"step.success"}})

	var mu sync.Mutex
	acked := map[string]string{} // idempotency key → step id
	seen := map[string]string{}  // idempotency key → notification id
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			c := dialWS(t, rs.engine(r))
			if !c.trySend(map[string]any{"action": "connect", "apiKey": key, "serviceName": "load"}) {
				return
			}
			if rep := c.replyOrClosed(5 * time.Second); rep == nil || rep["status"] != "success" {
				return
			}
			if !c.trySend(map[string]any{"action": "startThread", "label": fmt.Sprint("load-", r)}) {
				return
			}
			rep := c.replyOrClosed(5 * time.Second)
			if rep == nil {
				return
			}
			tid, _ := rep["threadId"].(string)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Sprintf("r%d-%d", r, i)
				if !c.trySend(step(tid, "load", "success", k, nil)) {
					return
				}
				rep := c.replyOrClosed(5 * time.Second)
				if rep == nil {
					return // replica killed: unacknowledged, nothing promised
				}
				if rep["status"] == "success" {
					mu.Lock()
					acked[k] = rep["stepId"].(string)
					mu.Unlock()
				}
			}
		}(r)
	}
	collect := func(c *wsClient, until time.Time) {
		for time.Now().Before(until) {
			select {
			case n := <-c.pushes:
				body := n["notification"].(map[string]any)
				k, id := body["idempotencyKey"].(string), body["notificationId"].(string)
				mu.Lock()
				if prev, ok := seen[k]; ok && prev != id {
					t.Errorf("step %s pushed with two notification ids %s and %s", k, prev, id)
				}
				seen[k] = id
				mu.Unlock()
				c.trySend(map[string]any{"action": "ack_notification", "ackToken": n["ackToken"]})
			case <-c.closed:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	// Load before and after the kill is counted, not timed: a busy machine
	// acknowledges fewer steps per second.
	ackedAtLeast := func(c *wsClient, n int) {
		t.Helper()
		pollUntil(t, fmt.Sprintf("%d steps acknowledged", n), func() bool {
			collect(c, time.Now().Add(100*time.Millisecond))
			mu.Lock()
			defer mu.Unlock()
			return len(acked) >= n
		})
	}
	ackedAtLeast(sub, 25)
	_ = rs.procs[0].Process.Signal(syscall.SIGKILL)
	_, _ = rs.procs[0].Process.Wait()
	killedAt := time.Now()
	// Replica 1's subscriber reconnects to replica 2.
	back := connectWS(t, rs.engine(1), key)
	back.ok(map[string]any{"action": "subscribe", "requestId": "s", "stepName": "load", "eventTypes": []string{"step.success"}})
	ackedAtLeast(back, 50)
	close(stop)
	wg.Wait()
	mu.Lock()
	total := len(acked)
	mu.Unlock()
	if total < 50 {
		t.Fatalf("only %d steps acknowledged", total)
	}
	// Everything acknowledged reaches the subscriber (leases of the killed
	// replica end after notifications.redeliver_after).
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		collect(back, time.Now().Add(500*time.Millisecond))
		mu.Lock()
		missing := 0
		for k := range acked {
			if _, ok := seen[k]; !ok {
				missing++
			}
		}
		mu.Unlock()
		if missing == 0 {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var missing []string
	for k := range acked {
		if _, ok := seen[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%d of %d acknowledged steps never notified after the kill (e.g. %v)", len(missing), total, missing[:min(5, len(missing))])
	}
	t.Logf("%d steps acknowledged across 3 replicas, replica 1 killed; every one notified, last %v after the kill", total, time.Since(killedAt).Round(time.Millisecond))
	// No acknowledged step is lost: each is stored.
	db, err := sqlx.Open("postgres", rs.url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ids := make([]string, 0, len(acked))
	for _, id := range acked {
		ids = append(ids, id)
	}
	q, args, _ := sqlx.In(`SELECT COUNT(*) FROM thread_activities WHERE id IN (?)`, ids)
	var n int
	if err := db.Get(&n, db.Rebind(q), args...); err != nil || n != len(ids) {
		t.Fatalf("%d of %d acknowledged steps stored (%v)", n, len(ids), err)
	}
}

// trySend writes m, reporting failure instead of failing the test (the
// replica may have been killed).
func (c *wsClient) trySend(m map[string]any) bool {
	b, _ := json.Marshal(m)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.conn.Write(ctx, websocket.MessageText, b) == nil
}

// replyOrClosed returns the next reply, or nil if the socket closed or
// nothing came within d.
func (c *wsClient) replyOrClosed(d time.Duration) map[string]any {
	select {
	case r := <-c.replies:
		return r
	case <-c.closed:
		return nil
	case <-time.After(d):
		return nil
	}
}
