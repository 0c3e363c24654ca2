// Package upgrade tests what an operator does to a running installation:
// upgrades through the schema compatibility gate (an engine whose binary
// the database no longer allows answers /readyz with 503, says why once in
// its log and refuses every request instead of failing them; the previous
// release keeps serving beside the new one during an expand step), rollback,
// and backup and restore on both stores.
package upgrade

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/server"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/test/enginetest"
)

// syncBuffer is a log sink safe for the engine's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func setFloor(t *testing.T, db *sqldb.DB, floor int64) {
	t.Helper()
	// Through the embedded sqlx.DB: this engine's own gate may refuse it.
	if _, err := db.DB.ExecContext(context.Background(), db.Rebind(`UPDATE schema_compat SET min_binary_schema = ? WHERE id = 1`), floor); err != nil {
		t.Fatal(err)
	}
}

func readyz(t *testing.T, e *enginetest.Engine) (int, map[string]any) {
	t.Helper()
	resp, body := e.Do(t, http.MethodGet, "/readyz", "", nil)
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("/readyz: %s", body)
	}
	return resp.StatusCode, m
}

func TestGateClosesAndOpens(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		logs := &syncBuffer{}
		e := enginetest.Start(t, d, func(_ *config.Config, o *server.Options) {
			o.Logger = slog.New(slog.NewTextHandler(logs, nil))
			o.CompatCheckInterval = time.Hour // only /readyz checks here
		})
		schema := sqldb.EmbeddedSchema(d)
		code, body := readyz(t, e)
		if code != http.StatusOK || body["schema"].(map[string]any)["binary"] != float64(schema) {
			t.Fatalf("/readyz of a fresh engine: %d %v", code, body)
		}
		invite := func(email string) (*http.Response, []byte) {
			return e.Do(t, http.MethodPost, "/v1/users", e.AdminKey, map[string]any{"email": email, "full_name": "X", "role": "viewer"})
		}
		if resp, body := invite("before@example.com"); resp.StatusCode != http.StatusCreated {
			t.Fatalf("invite: %d %s", resp.StatusCode, body)
		}

		// A newer release's contract migration raises the floor past this
		// binary: /readyz says 503 and why, every request but the probes
		// and /metrics is refused with 503 unavailable, nothing is written.
		setFloor(t, e.Server.DB, schema+1)
		code, body = readyz(t, e)
		if code != http.StatusServiceUnavailable || body["reason"] != "schema_incompatible" ||
			!strings.Contains(body["message"].(string), "older than its database allows") {
			t.Fatalf("/readyz with the binary below the floor: %d %v", code, body)
		}
		resp, raw := invite("during@example.com")
		var problem struct {
			Code   string `json:"code"`
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(raw, &problem)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Content-Type") != "application/problem+json" ||
			problem.Code != "unavailable" || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("a write while refused: %d %s %s", resp.StatusCode, resp.Header, raw)
		}
		if resp, _ := e.Do(t, http.MethodGet, "/healthz", "", nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("/healthz while refused: %d", resp.StatusCode)
		}
		resp, metrics := e.Do(t, http.MethodGet, "/metrics", "", nil)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(metrics), "threadengine_ready 0") ||
			!strings.Contains(string(metrics), `threadengine_database_min_binary_schema `) {
			t.Fatalf("/metrics while refused: %d", resp.StatusCode)
		}
		// Background work writes nothing either (the store refuses it).
		if _, err := e.Server.Store.DeleteExpiredSessions(context.Background(), time.Now()); err == nil {
			t.Fatal("a store write went through while refused")
		}
		readyz(t, e) // a second check while closed logs nothing new
		if n := strings.Count(logs.String(), `msg="schema compatibility gate closed`); n != 1 {
			t.Fatalf("the refusal was logged %d times, want once:\n%s", n, logs)
		}
		for _, want := range []string{"binary_schema=" + itoa(schema), "min_binary_schema=" + itoa(schema+1), "level=ERROR"} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("the refusal's log line lacks %s:\n%s", want, logs)
			}
		}

		// Rolled back (the contract's Down restores the floor): it serves.
		setFloor(t, e.Server.DB, 1)
		if code, body := readyz(t, e); code != http.StatusOK {
			t.Fatalf("/readyz after the rollback: %d %v", code, body)
		}
		if resp, body := invite("after@example.com"); resp.StatusCode != http.StatusCreated {
			t.Fatalf("invite after the rollback: %d %s", resp.StatusCode, body)
		}
		if !strings.Contains(logs.String(), "schema compatibility gate open") {
			t.Errorf("the reopening was not logged:\n%s", logs)
		}
		var n int
		if err := e.Server.DB.GetContext(context.Background(), &n, `SELECT COUNT(*) FROM users WHERE email = 'during@example.com'`); err != nil || n != 0 {
			t.Fatalf("the refused invite was written: %d %v", n, err)
		}
	})
}

// Without any probe, the periodic check closes the gate: a replica left
// behind stops writing even if nothing asks /readyz.
func TestGateClosesWithoutProbes(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		e := enginetest.Start(t, d, func(_ *config.Config, o *server.Options) { o.CompatCheckInterval = 20 * time.Millisecond })
		setFloor(t, e.Server.DB, sqldb.EmbeddedSchema(d)+1)
		eventually(t, 30*time.Second, "the periodic check closes the gate", func() bool { return e.Server.DB.Refusal() != nil })
	})
}

// A binary claiming the previous release's schema (this code with the
// compatibility override: the same code path a real older gated binary
// runs) starts and serves beside this one on a database this one migrated,
// as long as the floor allows it (an expand step).
func TestPreviousReleaseServesDuringExpand(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		if d == sqldb.SQLite {
			t.Skip("SQLite serves one engine process at a time: there is no rolling upgrade")
		}
		cur := enginetest.Start(t, d)
		schema := sqldb.EmbeddedSchema(d)
		prev := enginetest.Start(t, d, enginetest.WithoutOwner(), enginetest.WithDatabase(cur.Config.Database.URL),
			func(_ *config.Config, o *server.Options) { o.BinarySchema = schema - 1 })
		prev.AdminKey = cur.AdminKey
		for _, e := range []*enginetest.Engine{cur, prev} {
			if code, body := readyz(t, e); code != http.StatusOK {
				t.Fatalf("/readyz: %d %v", code, body)
			}
		}
		if resp, body := prev.Do(t, http.MethodPost, "/v1/users", prev.AdminKey, map[string]any{"email": "p@example.com", "full_name": "P", "role": "viewer"}); resp.StatusCode != http.StatusCreated {
			t.Fatalf("write through the previous release: %d %s", resp.StatusCode, body)
		}
		// The contract step: the floor rises to this release's schema.
		setFloor(t, cur.Server.DB, schema)
		if code, _ := readyz(t, prev); code != http.StatusServiceUnavailable {
			t.Fatalf("previous release after the contract step: /readyz %d", code)
		}
		if code, _ := readyz(t, cur); code != http.StatusOK {
			t.Fatalf("this release after the contract step: /readyz %d", code)
		}
	})
}

// eventually polls cond until it holds, failing after limit.
func eventually(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(limit)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("not within %v: %s", limit, what)
		}
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// A binary the database already refuses still starts (so /healthz keeps
// the process and /readyz tells the orchestrator why) instead of exiting
// into a restart loop; the gate refuses whatever its start-up would write.
func TestRefusedBinaryStarts(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		first := enginetest.Start(t, d)
		setFloor(t, first.Server.DB, sqldb.EmbeddedSchema(d)+1)
		url := first.Config.Database.URL
		if err := first.Server.Close(); err != nil { // SQLite: one engine at a time
			t.Fatal(err)
		}
		logs := &syncBuffer{}
		e := enginetest.Start(t, d, enginetest.WithoutOwner(), enginetest.WithDatabase(url),
			func(_ *config.Config, o *server.Options) { o.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
		if code, body := readyz(t, e); code != http.StatusServiceUnavailable || body["reason"] != "schema_incompatible" {
			t.Fatalf("/readyz: %d %v", code, body)
		}
		if resp, _ := e.Do(t, http.MethodGet, "/healthz", "", nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("/healthz: %d", resp.StatusCode)
		}
		if !strings.Contains(logs.String(), `msg="schema compatibility gate closed`) {
			t.Fatalf("no refusal logged at start:\n%s", logs)
		}
	})
}
