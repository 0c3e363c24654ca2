package upgrade

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/test/enginebin"
)

// The releases of the rolling upgrade below, as migrations added to this
// tree's (with go build -overlay: the same code, more embedded files).
// expand adds a table the next release writes; contract drops what only
// releases before it needed and raises the floor to the expand release's
// schema, restoring it in its Down to this release's floor
// (sqldb.EmbeddedFloor: this release's own contract migration 00108 set it;
// the release before the gate does not check it and serves on).
const (
	expandVersion   = 90000001
	contractVersion = 90000002
	expandSQL       = `-- +goose Up
CREATE TABLE upgrade_probe (id TEXT PRIMARY KEY, legacy_note TEXT);

-- +goose Down
DROP TABLE upgrade_probe;
`
)

var contractSQL = fmt.Sprintf(`-- +goose Up
ALTER TABLE upgrade_probe DROP COLUMN legacy_note;
UPDATE schema_compat SET min_binary_schema = 90000001, updated_at = now() WHERE id = 1;

-- +goose Down
UPDATE schema_compat SET min_binary_schema = %d, updated_at = now() WHERE id = 1;
ALTER TABLE upgrade_probe ADD COLUMN legacy_note TEXT;
`, sqldb.EmbeddedFloor)

// build compiles ./cmd/threadengine of the module at dir into out, with
// extra migrations (file name → SQL) added through an overlay. The
// binaries are linked by enginebin with the Dockerfile's flags, so the
// packages compiled for the other test packages' engines are reused here,
// and each of the four binaries is linked once and then kept in the go
// command's cache for the next run (the release before the gate included:
// -trimpath makes its export directory's path irrelevant).
func build(t *testing.T, dir, out string, extra map[string]string) {
	t.Helper()
	var args []string
	if len(extra) > 0 {
		repl := map[string]string{}
		tmp := t.TempDir()
		for name, sql := range extra {
			src := filepath.Join(tmp, name)
			if err := os.WriteFile(src, []byte(sql), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, dialect := range []string{"postgres", "sqlite"} {
				repl[filepath.Join(dir, "db", dialect, name)] = src
			}
		}
		ov, _ := json.Marshal(map[string]any{"Replace": repl})
		ovFile := filepath.Join(tmp, "overlay.json")
		if err := os.WriteFile(ovFile, ov, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-overlay", ovFile)
	}
	start := time.Now()
	if err := enginebin.Build(dir, out, args...); err != nil {
		t.Fatal(err)
	}
	t.Logf("built %s (%s)", filepath.Base(out), time.Since(start).Round(time.Millisecond))
}

// previousReleaseSchema is the schema of the release before this one. The
// test builds that release from git (the tree before the commit that added
// the lowest-numbered migration above it) and runs it beside this release
// through this release's migrations, as a rolling upgrade does. Raise it to
// the released schema when a release is cut.
const previousReleaseSchema = 106

// previousRelease exports the tree as it was before the gate existed (the
// parent of the commit that added its migration; HEAD while that is not
// committed yet) and returns its directory, or "" with the reason.
func previousRelease(t *testing.T, root string) (string, string) {
	t.Helper()
	return exportBefore(t, root, "db/postgres/00030_schema_compat.sql")
}

// lastRelease exports the release of schema previousReleaseSchema (the
// tree before this release's first migration) and returns its directory,
// or "" with the reason (no migration above it, no git history).
func lastRelease(t *testing.T, root string) (string, string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "db", "postgres", "*.sql"))
	if err != nil {
		return "", err.Error()
	}
	first, lowest := "", 0
	for _, f := range files {
		var n int
		if _, err := fmt.Sscanf(filepath.Base(f), "%d_", &n); err == nil && n > previousReleaseSchema && (first == "" || n < lowest) {
			first, lowest = filepath.Base(f), n
		}
	}
	if first == "" {
		return "", fmt.Sprintf("no migration above schema %d", previousReleaseSchema)
	}
	return exportBefore(t, root, "db/postgres/"+first)
}

// exportBefore exports the tree as it was before file was added (the
// parent of the commit that added it; HEAD while that is not committed
// yet) and returns its directory, or "" with the reason.
func exportBefore(t *testing.T, root, file string) (string, string) {
	t.Helper()
	git := func(args ...string) (string, error) {
		c := exec.Command("git", args...)
		c.Dir = root
		b, err := c.Output()
		return strings.TrimSpace(string(b)), err
	}
	added, err := git("log", "--diff-filter=A", "--format=%H", "-1", "--", file)
	if err != nil {
		return "", fmt.Sprintf("no git history here (%v)", err)
	}
	rev := "HEAD"
	if added != "" {
		rev = added + "^"
	}
	sha, err := git("rev-parse", "--verify", rev+"^{commit}")
	if err != nil {
		return "", fmt.Sprintf("%s is not in this clone (shallow?)", rev)
	}
	dir := t.TempDir()
	archive := exec.Command("git", "archive", "--format=tar", sha)
	archive.Dir = root
	tar := exec.Command("tar", "-x", "-C", dir)
	pipe, _ := archive.StdoutPipe()
	tar.Stdin = pipe
	if err := tar.Start(); err != nil {
		return "", err.Error()
	}
	if err := archive.Run(); err != nil {
		return "", fmt.Sprintf("git archive %s: %v", sha, err)
	}
	if err := tar.Wait(); err != nil {
		return "", fmt.Sprintf("tar: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, file)); err == nil {
		return "", fmt.Sprintf("the exported tree already has %s", file)
	}
	t.Logf("the tree before %s: %s", file, sha[:12])
	return dir, ""
}

// proc is one engine process.
type proc struct {
	name, addr string
	cmd        *exec.Cmd
	log        *syncBuffer
}

// env is the engines' environment: this process's, without its
// THREADENGINE_* variables (the test harness's would be refused), plus the
// database and a shared chain secret.
func env(url string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "THREADENGINE_") {
			out = append(out, kv)
		}
	}
	return append(out, "THREADENGINE_DATABASE__URL="+url, "THREADENGINE_SECURITY__HASH_CHAIN_SECRET=upgrade-test-secret-0123456789abcdef")
}

// boundAddr finds the address in the "threadengine listening" line.
var boundAddr = regexp.MustCompile(`\baddr=(\S+)`)

// serve starts bin on a port it picks itself and returns once it logged
// that it listens, with the address from that line (text format:
// `msg="threadengine listening" addr=127.0.0.1:…`). Released binaries log
// it too, whereas they do not know server.address_file.
func serve(t *testing.T, name, bin, url string) *proc {
	t.Helper()
	p := &proc{name: name, log: &syncBuffer{}}
	p.cmd = exec.Command(bin, "serve")
	p.cmd.Dir = t.TempDir()
	p.cmd.Env = append(env(url), "THREADENGINE_SERVER__LISTEN=127.0.0.1:0", "THREADENGINE_LOG__LEVEL=info", "THREADENGINE_LOG__FORMAT=text")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = w
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	listening := make(chan string, 1)
	go func() {
		defer r.Close()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		said := false
		for sc.Scan() {
			p.log.Write([]byte(sc.Text() + "\n"))
			if m := boundAddr.FindStringSubmatch(sc.Text()); !said && m != nil && strings.Contains(sc.Text(), "threadengine listening") {
				said = true
				listening <- m[1]
			}
		}
		if !said {
			listening <- ""
		}
	}()
	t.Cleanup(p.stop)
	if p.addr = <-listening; p.addr == "" {
		t.Fatalf("%s did not start:\n%s", name, p.log)
	}
	return p
}

func (p *proc) stop() {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
	}
}

func (p *proc) readyz() int {
	resp, err := http.Get("http://" + p.addr + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// run runs a one-shot command of bin on the database.
func run(t *testing.T, bin, url string, args ...string) string {
	t.Helper()
	c := exec.Command(bin, args...)
	c.Dir, c.Env = t.TempDir(), env(url)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// outcome of one write.
type outcome int

const (
	written  outcome = iota
	refused          // 503 before anything was written (the gate)
	failedOp         // anything else: what a rolling upgrade must never cause
)

// write records a thread with one step through the SDK protocol, on a new
// connection, the way a service writes.
func write(p *proc, key, label string) (outcome, string) {
	return writeTo(p.addr, key, &writeOp{label: label})
}

// writeOp is one service operation: start a thread, record its step. A
// client whose operation a replica refused part-way finishes it elsewhere:
// the thread it started is kept in threadID and the step is re-sent with
// the same idempotency key.
type writeOp struct {
	label    string
	threadID string
}

// gateRefusal reports a reply refusing a frame because the schema
// compatibility gate closed under an open session (nothing was written).
func gateRefusal(r map[string]any) bool {
	msg, _ := r["message"].(string)
	return r["code"] == "unavailable" && strings.Contains(msg, "refuses to serve")
}

// writeTo runs op (what is left of it) against the engine at addr.
func writeTo(addr, key string, op *writeOp) (outcome, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, "ws://"+addr+"/threads", nil)
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusServiceUnavailable {
			return refused, ""
		}
		return failedOp, err.Error()
	}
	defer conn.CloseNow()
	call := func(m map[string]any) (map[string]any, outcome, error) {
		raw, _ := json.Marshal(m)
		if err := conn.Write(ctx, websocket.MessageText, raw); err != nil {
			return nil, failedOp, err
		}
		for {
			_, data, err := conn.Read(ctx)
			if err != nil {
				return nil, failedOp, err
			}
			var r map[string]any
			if err := json.Unmarshal(data, &r); err != nil {
				return nil, failedOp, err
			}
			if r["action"] != m["action"] {
				continue
			}
			switch {
			case r["status"] == "success":
				return r, written, nil
			case gateRefusal(r):
				return r, refused, fmt.Errorf("%v", r)
			}
			return r, failedOp, fmt.Errorf("%v", r)
		}
	}
	if _, o, err := call(map[string]any{"action": "connect", "apiKey": key, "serviceName": "upgrade-test"}); err != nil {
		return o, "connect: " + err.Error()
	}
	if op.threadID == "" {
		r, o, err := call(map[string]any{"action": "startThread", "label": op.label, "refs": map[string]any{}})
		if err != nil {
			return o, "startThread: " + err.Error()
		}
		op.threadID, _ = r["threadId"].(string)
	}
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	if _, o, err := call(map[string]any{"action": "recordThreadEvent", "threadId": op.threadID, "stepName": "ship", "status": "success",
		"startedAt": now, "finishedAt": now, "context": map[string]any{}, "idempotencyKey": op.label}); err != nil {
		return o, "recordThreadEvent: " + err.Error()
	}
	_ = conn.Close(websocket.StatusNormalClosure, "")
	return written, ""
}

func mustWrite(t *testing.T, p *proc, key, label string) {
	t.Helper()
	if o, why := write(p, key, label); o != written {
		t.Fatalf("write through %s: outcome %d %s\n%s", p.name, o, why, p.log)
	}
}

// balancer routes writes to the replicas its probe last saw ready (as a
// load balancer on /readyz does) and counts every outcome; an operation a
// replica refused goes to another ready one.
type balancer struct {
	mu       sync.Mutex
	ready    map[*proc]bool
	procs    []*proc
	outcomes map[string][3]int // replica → written, refused, failed
	failures []string
	next     atomic.Int64
}

func (b *balancer) probe() {
	for _, p := range b.procs {
		ok := p.readyz() == http.StatusOK
		b.mu.Lock()
		b.ready[p] = ok
		b.mu.Unlock()
	}
}

func (b *balancer) pick(not *proc) *proc {
	b.mu.Lock()
	defer b.mu.Unlock()
	var ready []*proc
	for _, p := range b.procs {
		if b.ready[p] && p != not {
			ready = append(ready, p)
		}
	}
	if len(ready) == 0 {
		return nil
	}
	return ready[int(b.next.Add(1))%len(ready)]
}

// run sends op to a ready replica, and to another one while a replica
// refuses it; it returns false once stop is closed.
func (b *balancer) run(op *writeOp, key string, stop <-chan struct{}) bool {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last *proc
	for refusals := 0; refusals < 10; {
		p := b.pick(last)
		if p == nil { // nothing ready until the next probe
			select {
			case <-stop:
				if refusals > 0 {
					b.record(last, failedOp, op.label+": refused, and no other replica was ready before the test ended")
				}
				return false
			case <-tick.C:
			}
			continue
		}
		o, why := writeTo(p.addr, key, op)
		b.record(p, o, why)
		if o != refused {
			return true
		}
		refusals++
		last = p
	}
	b.record(last, failedOp, op.label+": refused by every replica tried")
	return true
}

func (b *balancer) record(p *proc, o outcome, why string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.outcomes[p.name]
	c[o]++
	b.outcomes[p.name] = c
	if o == failedOp {
		b.failures = append(b.failures, p.name+": "+why)
	}
}

// TestRollingUpgradeWithBinaries runs real engine binaries on one
// PostgreSQL database through rolling upgrades: the release before the gate
// and the previous release (both built from git), this release, and two
// later releases made of this code plus an expand and a contract
// migration. The release before the gate serves beside the previous
// release; the previous release serves and writes beside this release
// through this release's migrations (its contract steps included: the
// floor they raise admits it); during the expand steps all of them serve
// and write; after the contract step this release is refused (readyz 503,
// writes refused with 503, none failed) while the later ones serve; the
// rollback runbook (migrate down with the newer binary) lets it serve
// again.
func TestRollingUpgradeWithBinaries(t *testing.T) {
	if os.Getenv(sqldbtest.PostgresEnv) == "" {
		t.Skipf("%s not set", sqldbtest.PostgresEnv)
	}
	if testing.Short() {
		t.Skip("builds five engine binaries")
	}
	root, _ := filepath.Abs("../..")
	bins := t.TempDir()
	bin := func(n string) string { return filepath.Join(bins, n) }
	expandName := fmt.Sprintf("%d_upgrade_expand.sql", expandVersion)
	contractName := fmt.Sprintf("%d_upgrade_contract.sql", contractVersion)
	build(t, root, bin("cur"), nil)
	build(t, root, bin("next"), map[string]string{expandName: expandSQL})
	build(t, root, bin("after"), map[string]string{expandName: expandSQL, contractName: contractSQL})
	prevDir, why := previousRelease(t, root)
	if prevDir != "" {
		build(t, prevDir, bin("prev"), nil)
	} else {
		t.Logf("the release before the gate is not run: %s", why)
	}
	lastDir, why := lastRelease(t, root)
	if lastDir != "" {
		build(t, lastDir, bin("last"), nil)
	} else {
		t.Logf("the previous release (schema %d) is not run: %s", previousReleaseSchema, why)
	}
	url := sqldbtest.URL(t, sqldb.Postgres)
	schema := sqldb.EmbeddedSchema(sqldb.Postgres)

	// 1. The oldest release at hand installs.
	first := "cur"
	switch {
	case prevDir != "":
		first = "prev"
	case lastDir != "":
		first = "last"
	}
	out := run(t, bin(first), url, "bootstrap-owner", "--email", "owner@example.com")
	key := strings.Fields(out)[len(strings.Fields(out))-1]
	var prev, last *proc
	if prevDir != "" {
		prev = serve(t, "prev", bin("prev"), url)
		mustWrite(t, prev, key, "prev-alone")
	}

	// 2. The previous release migrates (the gate's table and everything up
	// to its schema); the release before the gate keeps serving and writing
	// beside it. That rollout ends here: the release before the gate checks
	// no floor, and this release's contract migration (00108) drops a
	// column it names, so its writes would fail beside this release
	// (docs/operators/running.md#upgrades: finish that rollout first).
	if lastDir != "" {
		last = serve(t, "last", bin("last"), url)
		mustWrite(t, last, key, "last-alone")
		if prev != nil {
			mustWrite(t, prev, key, "prev-beside-last")
		}
	}
	if prev != nil {
		prev.stop()
	}

	// 3. This release migrates; the previous release keeps serving and
	// writing beside it (the floor is at most its schema).
	var serving []*proc
	if last != nil {
		serving = append(serving, last)
	}
	cur := serve(t, "cur", bin("cur"), url)
	serving = append(serving, cur)
	st := run(t, bin("cur"), url, "migrate", "status")
	if !strings.Contains(st, fmt.Sprintf("database schema %d; binaries of schema %d up to %d may use it", schema, sqldb.EmbeddedFloor, schema)) {
		t.Fatalf("migrate status after this release started:\n%s", st)
	}
	if sqldb.EmbeddedFloor > previousReleaseSchema {
		t.Fatalf("this release's floor %d refuses the previous release (schema %d)", sqldb.EmbeddedFloor, previousReleaseSchema)
	}
	// Expand: the next release adds its table; three releases serve.
	next := serve(t, "next", bin("next"), url)
	serving = append(serving, next)
	for _, p := range serving {
		if code := p.readyz(); code != http.StatusOK {
			t.Fatalf("%s during the expand steps: /readyz %d\n%s", p.name, code, p.log)
		}
		mustWrite(t, p, key, "expand-"+p.name)
	}
	if last != nil {
		last.stop() // the rollout replaced it
	}

	// 4. Contract, under traffic: a balancer probes /readyz and writes
	// through the ready replicas while the contract release's migration job
	// runs and its replica starts.
	lb := &balancer{ready: map[*proc]bool{}, procs: []*proc{cur, next}, outcomes: map[string][3]int{}}
	lb.probe()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				lb.probe()
			}
		}
	})
	var n atomic.Int64
	for w := 0; w < 3; w++ {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if !lb.run(&writeOp{label: fmt.Sprintf("lb-%d", n.Add(1))}, key, stop) {
					return
				}
			}
		})
	}
	writesBy := func(name string) int { lb.mu.Lock(); defer lb.mu.Unlock(); return lb.outcomes[name][written] }
	eventually(t, 60*time.Second, "writes through both replicas before the contract step", func() bool { return writesBy("cur") > 3 && writesBy("next") > 3 })
	out = run(t, bin("after"), url, "migrate", "up")
	if !strings.Contains(out, contractName) || !strings.Contains(out, fmt.Sprintf("binaries of schema %d up to %d", expandVersion, contractVersion)) {
		t.Fatalf("contract migration:\n%s", out)
	}
	after := serve(t, "after", bin("after"), url)
	lb.mu.Lock()
	lb.procs = append(lb.procs, after)
	lb.mu.Unlock()
	eventually(t, 30*time.Second, "this release refused after the contract step", func() bool { return cur.readyz() == http.StatusServiceUnavailable })
	if prevDir != "" {
		// The release before the gate predates the transparency log too: it
		// queued no leaf for the steps it wrote beside the previous release
		// (after that release's backfill). The catch-up (at each start,
		// every minute) has appended them: every step is in the log or
		// queued.
		db, err := sqldb.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var unlogged int
		eventually(t, 3*time.Minute, "every step the release before the log wrote appended to the log", func() bool {
			if err := db.DB.Get(&unlogged, `SELECT count(*) FROM thread_activities a
 WHERE NOT EXISTS (SELECT 1 FROM tlog_leaves l WHERE l.step_id = a.id)
 AND NOT EXISTS (SELECT 1 FROM tlog_pending p WHERE p.step_id = a.id)`); err != nil {
				t.Fatal(err)
			}
			return unlogged == 0
		})
	}
	base := writesBy("next") + writesBy("after")
	eventually(t, 60*time.Second, "writes through the later releases after the contract step", func() bool {
		return writesBy("next")+writesBy("after") > base+5 && writesBy("after") > 0
	})
	close(stop)
	wg.Wait()
	if len(lb.failures) > 0 {
		t.Fatalf("%d writes failed during the upgrade (want none): %v", len(lb.failures), lb.failures[:min(5, len(lb.failures))])
	}
	// Refused operations were finished on another replica (a refusal is a
	// 503 or the gate's "unavailable" frame: nothing written).
	t.Logf("writes during the contract step by replica (written, refused, failed): %v", lb.outcomes)

	// A client that ignores readiness and writes to the refused replica
	// directly is refused with 503 before anything is written, never failed.
	if o, why := write(cur, key, "direct"); o != refused {
		t.Fatalf("a write sent straight to the refused replica: outcome %d %s", o, why)
	}
	for _, want := range []string{"schema compatibility gate closed", fmt.Sprintf("binary_schema=%d", schema), fmt.Sprintf("min_binary_schema=%d", expandVersion)} {
		if !strings.Contains(cur.log.String(), want) {
			t.Errorf("the refused replica's log lacks %q:\n%s", want, cur.log)
		}
	}
	for _, p := range []*proc{next, after} {
		if code := p.readyz(); code != http.StatusOK {
			t.Fatalf("%s after the contract step: /readyz %d", p.name, code)
		}
	}

	// 5. Rollback runbook: the newest binary rolls the contract back (its
	// Down restores the floor); this release serves again.
	after.stop()
	out = run(t, bin("after"), url, "migrate", "down", "--to", fmt.Sprint(expandVersion))
	if !strings.Contains(out, fmt.Sprintf("binaries of schema %d up to", sqldb.EmbeddedFloor)) {
		t.Fatalf("rollback:\n%s", out)
	}
	eventually(t, 30*time.Second, "this release serves again after the rollback", func() bool { return cur.readyz() == http.StatusOK })
	mustWrite(t, cur, key, "after-rollback")

	// A binary that does not know a migration cannot roll it back: it
	// says which version it lacks instead of guessing.
	c := exec.Command(bin("cur"), "migrate", "down")
	c.Dir, c.Env = t.TempDir(), env(url)
	if b, err := c.CombinedOutput(); err == nil || !strings.Contains(string(b), fmt.Sprintf("the database is at schema %d, which this binary (schema %d) does not know", expandVersion, schema)) {
		t.Fatalf("this release rolling back a later release's migration: %v\n%s", err, b)
	}
}
