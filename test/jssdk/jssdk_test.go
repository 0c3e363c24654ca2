// Package jssdk runs the JavaScript SDK's tests (sdk/js, node --test)
// against engines built from this repository, on SQLite and (when
// THREADENGINE_TEST_POSTGRES_URL is set) PostgreSQL, so `go test ./...`
// covers the SDK too; it also type-checks index.d.ts and checks what the
// published package would contain.
package jssdk

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/wsapi"
	"github.com/threadengine/engine/test/enginebin"
	"github.com/threadengine/engine/test/enginetest"
)

func sdkDir(t *testing.T) string {
	// go test runs a package's tests in its directory (with -trimpath,
	// runtime.Caller gives an import path, not a file).
	dir, err := filepath.Abs(filepath.Join("..", "..", "sdk", "js"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// The SDK's automatic idempotency keys must equal the Go side's; the node
// tests check the SDK against this fixture, this test checks the fixture
// against Go.
func TestIdempotencyVectorsMatchGo(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(sdkDir(t), "test", "fixtures", "idempotency-keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vs []struct {
		Name    string            `json:"name"`
		Step    string            `json:"stepName"`
		Context map[string]string `json:"context"`
		Key     string            `json:"key"`
	}
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs) < 10 {
		t.Fatalf("only %d vectors", len(vs))
	}
	for _, v := range vs {
		if got := wsapi.AutoIdempotencyKey(v.Step, v.Context); got != v.Key {
			t.Errorf("%s: Go computes %s, fixture says %s", v.Name, got, v.Key)
		}
	}
}

func nodeMajor(t *testing.T) int {
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		t.Fatalf("node --version: %v", err)
	}
	major, _ := strconv.Atoi(strings.SplitN(strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), ".", 2)[0])
	return major
}

// devPackages are the dev dependencies the suite imports (ws is the SDK's
// one dependency; the OpenTelemetry SDK drives the span exporter's test).
var devPackages = []string{"ws", "typescript", "@opentelemetry/api", "@opentelemetry/sdk-trace-base", "@opentelemetry/resources"}

// npmInstalled runs npm ci in sdk/js unless every dev package is there; it
// reports whether they are.
func npmInstalled(ctx context.Context, t *testing.T, dir string) bool {
	missing := func() bool {
		for _, p := range devPackages {
			if !fileExists(filepath.Join(dir, "node_modules", filepath.FromSlash(p), "package.json")) {
				return true
			}
		}
		return false
	}
	if !missing() {
		return true
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Logf("npm is not installed: testing without the dev dependencies")
		return false
	}
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("npm ci failed, testing without the dev dependencies: %v\n%s", err, out)
		return false
	}
	return !missing()
}

func TestJavaScriptSDK(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the JavaScript SDK tests need Node.js 18 or later")
	}
	major := nodeMajor(t)
	if major < 18 {
		t.Skipf("node %d is too old: the JavaScript SDK needs Node.js 18 or later", major)
	}
	dir := sdkDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel) // after the parallel passes below

	hasDeps := npmInstalled(ctx, t, dir)
	hasWS := hasDeps || fileExists(filepath.Join(dir, "node_modules", "ws", "package.json"))

	bin := filepath.Join(t.TempDir(), "threadengine")
	if err := enginebin.Build(filepath.Join(dir, "..", ".."), bin); err != nil {
		t.Fatalf("build engine: %v", err)
	}

	// Node 22+ has a global WebSocket, which the SDK prefers; 18–21 use ws,
	// and 20–21 can also be given the platform one with a flag, so both
	// transports get tested there.
	type pass struct {
		name, node, nodeOptions, expect string
	}
	var passes []pass
	switch {
	case major >= 22:
		passes = []pass{{"platform WebSocket", "node", "", "platform"}}
	case hasWS && major >= 20:
		passes = []pass{{"ws package", "node", "", "ws"}, {"platform WebSocket", "node", "--experimental-websocket", "platform"}}
	case hasWS:
		passes = []pass{{"ws package", "node", "", "ws"}}
	case major >= 20:
		passes = []pass{{"platform WebSocket", "node", "--experimental-websocket", "platform"}}
	default:
		t.Skip("no WebSocket for the SDK: npm ci could not install ws and this Node.js has no built-in WebSocket")
	}
	files, err := filepath.Glob(filepath.Join(dir, "test", "*.test.js"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in %s/test: %v", dir, err)
	}
	// THREADENGINE_EXTRA_NODES lists other node binaries (colon-separated),
	// e.g. a Node.js 18 from `npm install node@18`, to run the suite on too.
	if extra := os.Getenv("THREADENGINE_EXTRA_NODES"); extra != "" && hasWS {
		for _, b := range filepath.SplitList(extra) {
			passes = append(passes, pass{"ws package, " + b, b, "", "ws"})
		}
	}
	run := func(t *testing.T, p pass, env ...string) {
		cmd := exec.CommandContext(ctx, p.node, append([]string{"--test", "--test-reporter=spec"}, files...)...)
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), "THREADENGINE_BIN="+bin, "NODE_OPTIONS="+p.nodeOptions,
			"THREADENGINE_EXPECT_WEBSOCKET="+p.expect, enginetest.MaxConnsEnv), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("node --test: %v\n%s", err, out)
		}
		if testing.Verbose() {
			t.Logf("%s", out)
		}
	}
	// SQLite: every pass. PostgreSQL: the first pass (the transport does not
	// depend on the store), one fresh schema per test file. The passes share
	// nothing (each test file starts its own engine on its own database and
	// port) and mostly wait on their engines, so they run in parallel.
	for _, p := range passes {
		t.Run("sqlite/"+p.name, func(t *testing.T) {
			t.Parallel()
			run(t, p)
		})
	}
	t.Run("postgres/"+passes[0].name, func(t *testing.T) {
		t.Parallel()
		dbs := map[string]string{}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if startsEngine.Match(src) { // the files that start an engine
				dbs[filepath.Base(f)] = sqldbtest.URL(t, sqldb.Postgres) // skips without THREADENGINE_TEST_POSTGRES_URL
			}
		}
		raw, err := json.Marshal(dbs)
		if err != nil {
			t.Fatal(err)
		}
		run(t, passes[0], "THREADENGINE_SDK_DATABASES="+string(raw))
		// Each file's engine really wrote to its schema.
		for file, u := range dbs {
			if file == "otel.test.js" && !hasDeps {
				continue // skipped without the OpenTelemetry SDK
			}
			if n := countThreads(t, u); n == 0 {
				t.Errorf("%s: no thread in its PostgreSQL schema: its engine did not use it", file)
			}
		}
	})
}

// startsEngine finds the test files that start an engine (test/helpers/engine.js).
var startsEngine = regexp.MustCompile(`\b(startEngine|useEngine)\(`)

// countThreads counts the threads rows of the schema a test URL names.
func countThreads(t *testing.T, raw string) int {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	db, err := sqlx.Open("postgres", raw)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.Get(&n, `SELECT count(*) FROM `+schema+`.threads`); err != nil {
		t.Fatalf("count threads in %s: %v", schema, err)
	}
	return n
}

// TestPackageContents checks what `npm pack` would publish: the sources,
// the types, the README and package.json (and a LICENSE, if the package
// gets one), and nothing else — no tests, fixtures or node_modules.
func TestPackageContents(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed")
	}
	dir := sdkDir(t)
	cmd := exec.Command("npm", "pack", "--dry-run", "--json", "--ignore-scripts")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("npm pack --dry-run: %v", err)
	}
	var packs []struct {
		Name  string `json:"name"`
		Files []struct {
			Path string `json:"path"`
		} `json:"files"`
	}
	if err := json.Unmarshal(out, &packs); err != nil || len(packs) != 1 {
		t.Fatalf("npm pack --json: %v\n%s", err, out)
	}
	var got []string
	for _, f := range packs[0].Files {
		got = append(got, f.Path)
	}
	want := []string{"README.md", "index.d.ts", "package.json"}
	if fileExists(filepath.Join(dir, "LICENSE")) {
		want = append(want, "LICENSE")
	}
	err = filepath.WalkDir(filepath.Join(dir, "src"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		want = append(want, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("npm pack would publish\n  %s\nwant exactly\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if packs[0].Name != "@threadengine/sdk" {
		t.Errorf("package name %q", packs[0].Name)
	}
}

// TestTypeScriptTypes compiles test/types/usage.ts against index.d.ts
// (strict) with the package's typecheck script, so the published types
// match how the SDK is used.
func TestTypeScriptTypes(t *testing.T) {
	dir := sdkDir(t)
	tsc := filepath.Join(dir, "node_modules", ".bin", "tsc")
	if !fileExists(tsc) {
		if _, err := exec.LookPath("npm"); err != nil {
			t.Skip("npm is not installed: the type check needs sdk/js's dev dependencies (npm ci)")
		}
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("npm ci failed, cannot install TypeScript: %v\n%s", err, out)
		}
	}
	// The package's own script, so `npm run typecheck` is what is tested;
	// tsc directly only where npm is missing but TypeScript is installed.
	cmd := exec.Command(tsc, "-p", filepath.Join("test", "types", "tsconfig.json"))
	if _, err := exec.LookPath("npm"); err == nil {
		cmd = exec.Command("npm", "run", "--silent", "typecheck")
	}
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
