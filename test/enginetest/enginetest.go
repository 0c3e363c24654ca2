// Package enginetest starts a real engine on a loopback port for end-to-end
// tests, on a fresh database of the requested dialect.
package enginetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/server"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/identity"
	"github.com/threadengine/engine/domain"
)

// Clock is a settable clock shared with the engine.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock starts at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t.UTC()} }

// Now returns the current fake time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// Engine is a running engine under test.
type Engine struct {
	URL    string // http://127.0.0.1:port
	Server *server.Server
	Clock  *Clock
	Config config.Config
	// Admin is the owner created by bootstrap; AdminKey is its personal key.
	Admin    domain.User
	AdminKey string

	userSeq atomic.Int64
}

// Option adjusts the config or options before start.
type Option func(*config.Config, *server.Options)

// noOwner marks an engine started without the bootstrap owner.
const noOwner = "enginetest:no-owner"

// WithoutOwner starts a fresh installation with no users, as an operator
// would find it before bootstrapping (Admin and AdminKey stay empty).
func WithoutOwner() Option {
	return func(_ *config.Config, o *server.Options) { o.DataDir += "/" + noOwner }
}

// WithConfig edits the configuration.
func WithConfig(fn func(*config.Config)) Option {
	return func(c *config.Config, _ *server.Options) { fn(c) }
}

// WithClockAt starts the engine's clock at t instead of now: a second
// replica started at the first one's time, as machines whose clocks agree
// (each engine's clock moves only when its test advances it, so replicas
// started a few seconds apart on a busy machine would otherwise disagree
// by those seconds for good).
func WithClockAt(t time.Time) Option {
	return func(_ *config.Config, o *server.Options) {
		if c, ok := o.Clock.(*Clock); ok {
			c.mu.Lock()
			c.now = t.UTC()
			c.mu.Unlock()
		}
	}
}

// WithDatabase starts the engine on an existing database (a second replica
// of an engine started before, typically with WithoutOwner).
func WithDatabase(url string) Option {
	return func(c *config.Config, _ *server.Options) { c.Database.URL = url }
}

// AnyPort is the environment that has an engine process (threadengine
// serve) listen on a free loopback port it picks itself (server.listen
// 127.0.0.1:0) and write the address it bound into a fresh file; BoundAddr
// reads it. Nothing can take the port between the choice and the bind, as
// it can with FreeAddr.
func AnyPort(t testing.TB) (env []string, addressFile string) {
	t.Helper()
	addressFile = filepath.Join(t.TempDir(), "address")
	return []string{"THREADENGINE_SERVER__LISTEN=127.0.0.1:0", "THREADENGINE_SERVER__ADDRESS_FILE=" + addressFile}, addressFile
}

// BoundAddr waits until the engine process started with AnyPort's
// environment has bound its port and returns that host:port. The wait is a
// hang guard, not a speed requirement: a fresh database migrates first.
func BoundAddr(t testing.TB, addressFile string, proc ...*os.Process) string {
	t.Helper()
	return BoundAddrs(t, addressFile, proc...)[0]
}

// BoundAddrs is BoundAddr with every address the file lists: server.listen's,
// then server.pprof_listen's (127.0.0.1:0 takes a free port there too) when
// the engine serves the profiler.
// Given the engine's process, it fails as soon as that process has exited
// (it died at start) instead of waiting out the hang guard.
func BoundAddrs(t testing.TB, addressFile string, proc ...*os.Process) []string {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(2 * time.Minute)
	for {
		if b, err := os.ReadFile(addressFile); err == nil {
			return strings.Fields(string(b))
		}
		for _, p := range proc {
			if exited(p.Pid) {
				t.Fatalf("the engine process %d exited before it wrote its address into %s", p.Pid, addressFile)
			}
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("the engine wrote no address into %s in 2 minutes", addressFile)
		}
	}
}

// FreeAddr returns a loopback host:port nothing listens on, to probe a port
// where nothing answers. Not for starting a server on: another process may
// take the port first (use AnyPort).
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Start runs an engine on 127.0.0.1:0 with a fresh database of dialect d and a
// fake clock starting now; it stops when the test ends.
func Start(t testing.TB, d sqldb.Dialect, opts ...Option) *Engine {
	t.Helper()
	cfg := config.Defaults()
	cfg.Server.Listen = "127.0.0.1:0"
	cfg.Security.HashChainSecret = "test-hash-chain-secret-0123456789abcdef"
	// The packages run several engines at once on one PostgreSQL server
	// (100 connections by default); 25 writers each ran it out.
	cfg.Database.MaxConns = TestMaxConns
	cfg.Limits.GraphQL.PoolConns = TestReadConns
	clock := NewClock(time.Now())
	o := server.Options{Clock: clock, DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, fn := range opts {
		fn(&cfg, &o)
	}
	if cfg.Database.URL == "" {
		cfg.Database.URL = sqldbtest.MigratedURL(t, d) // the engine finds nothing to migrate
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	if cfg.Server.PublicURL == "" {
		cfg.Server.PublicURL = url
	}
	srv, err := server.New(context.Background(), cfg, o)
	if err != nil {
		l.Close()
		t.Fatalf("start engine: %v", err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	e := &Engine{URL: url, Server: srv, Clock: clock, Config: cfg}
	if strings.HasSuffix(o.DataDir, "/"+noOwner) {
		return e
	}
	admin, key, err := srv.Identity.Application().Commands.BootstrapOwner.Handle(context.Background(), "owner@example.com", "Owner")
	if err != nil {
		t.Fatalf("bootstrap owner: %v", err)
	}
	e.Admin, e.AdminKey = admin, key
	return e
}

// NewUser invites a user with role through the API (as the admin), activates
// it the way a verified sign-in would, and creates a personal API key for it.
func (e *Engine) NewUser(t testing.TB, role domain.Role) (domain.User, string) {
	t.Helper()
	email := fmt.Sprintf("user%d-%s@example.com", e.userSeq.Add(1), role)
	u := e.InviteUser(t, email, role)
	ctx := context.Background()
	u, err := e.Server.Identity.Application().Commands.ActivateBySignIn.Handle(ctx, u.ID)
	if err != nil {
		t.Fatalf("activate %s: %v", email, err)
	}
	return u, e.NewKeyFor(t, u)
}

// InviteUser invites email with role through POST /v1/users as the admin.
func (e *Engine) InviteUser(t testing.TB, email string, role domain.Role) domain.User {
	t.Helper()
	resp, body := e.Do(t, http.MethodPost, "/v1/users", e.AdminKey, map[string]any{"email": email, "full_name": "Test " + string(role), "role": role})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("invite %s: %d %s", email, resp.StatusCode, body)
	}
	var out struct {
		User struct{ ID string } `json:"user"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	u, err := e.Server.Store.GetUser(context.Background(), out.User.ID)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// NewKeyFor creates a personal API key for u directly (u may be invited or
// suspended, which the API would not allow it to do itself).
func (e *Engine) NewKeyFor(t testing.TB, u domain.User) string {
	t.Helper()
	ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: u.ID, Role: domain.RoleViewer})
	key, _, err := e.Server.Identity.Application().Commands.CreateAPIKey.Handle(ctx, identity.CreateAPIKeyInput{Name: "test key"})
	if err != nil {
		t.Fatalf("key for %s: %v", u.Email, err)
	}
	return key
}

// Do sends a request with key as Bearer credential (none when key is empty);
// body is JSON-encoded unless it is a string or []byte. It returns the
// response (body already read and closed) and the body bytes.
func (e *Engine) Do(t testing.TB, method, path, key string, body any) (*http.Response, []byte) {
	t.Helper()
	return e.DoWith(t, method, path, body, func(r *http.Request) {
		if key != "" {
			r.Header.Set("Authorization", "Bearer "+key)
		}
	})
}

// DoWith is Do with a hook to set headers and cookies.
func (e *Engine) DoWith(t testing.TB, method, path string, body any, edit func(*http.Request)) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if edit != nil {
		edit(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp, out
}

// TestMaxConns is the writers' pool of a test engine on PostgreSQL
// (database.max_conns; 25 by default): the test packages run several
// engines at once on one server, whose max_connections is 100 by default.
const TestMaxConns = 10

// MaxConnsEnv is TestMaxConns for an engine process of this release
// (older releases refuse the key as unknown).
var MaxConnsEnv = "THREADENGINE_DATABASE__MAX_CONNS=" + strconv.Itoa(TestMaxConns)

// TestReadConns is the read pool of an in-process test engine
// (limits.graphql.pool_conns; 8 by default), for the same reason.
const TestReadConns = 4

// ProcStat is process pid's state letter and the CPU time (user + system)
// it has used so far, from /proc/<pid>/stat (an error satisfying
// os.IsNotExist when the process is gone).
func ProcStat(pid int) (state string, cpu time.Duration, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, err
	}
	// The command name (field 2) may hold spaces: count from after it. The
	// state is field 3; utime and stime, fields 14 and 15, are in clock
	// ticks (USER_HZ, 100 on Linux).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return "", 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return "", 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	const clockTicks = 100
	return f[0], time.Duration(ut+st) * time.Second / clockTicks, nil
}

// exited tells whether process pid (a child not waited for yet) has ended:
// it is gone from /proc or a zombie.
func exited(pid int) bool {
	state, _, err := ProcStat(pid)
	if err != nil {
		return os.IsNotExist(err)
	}
	return state == "Z" || state == "X"
}
