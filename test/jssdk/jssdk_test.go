// Package jssdk runs the JavaScript SDK's tests (sdk/js, node --test)
// against engines built from this repository, so `go test ./...` covers the
// SDK too.
package jssdk

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/wsapi"
)

func sdkDir(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "sdk", "js")
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

func TestJavaScriptSDK(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the JavaScript SDK tests need Node.js 18 or later")
	}
	major := nodeMajor(t)
	if major < 18 {
		t.Skipf("node %d is too old: the JavaScript SDK needs Node.js 18 or later", major)
	}
	dir := sdkDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	hasWS := fileExists(filepath.Join(dir, "node_modules", "ws", "package.json"))
	if !hasWS {
		// ws is the SDK's one dependency (Node.js 18–21 have no WebSocket).
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("npm ci failed, testing with the platform WebSocket only: %v\n%s", err, out)
		} else {
			hasWS = true
		}
	}

	bin := filepath.Join(t.TempDir(), "threadengine")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/threadengine")
	build.Dir = filepath.Join(dir, "..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build engine: %v\n%s", err, out)
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
	for _, p := range passes {
		t.Run(p.name, func(t *testing.T) {
			cmd := exec.CommandContext(ctx, p.node, append([]string{"--test", "--test-reporter=spec"}, files...)...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "THREADENGINE_BIN="+bin, "NODE_OPTIONS="+p.nodeOptions,
				"THREADENGINE_EXPECT_WEBSOCKET="+p.expect)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("node --test: %v\n%s", err, out)
			}
			if testing.Verbose() {
				t.Logf("%s", out)
			}
		})
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
