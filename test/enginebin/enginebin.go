// Package enginebin gives tests that run the engine as a process its
// binary, linked once for every test package of a run and for the next run.
package enginebin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Flags are the Dockerfile's compile flags (with CGO_ENABLED=0). Every test
// binary is built with them, so the engine's packages are compiled once for
// all of them, and with -trimpath the compiled packages do not depend on
// the checkout's path: a fresh clone finds them in the build cache.
var Flags = []string{"-trimpath", "-ldflags=-s -w"}

// Build writes cmd/threadengine of the module at dir ("" for this one) to
// out, built with Flags and extra go build flags (e.g. -overlay). It runs
// `go run -exec cp`: the go command keeps the executables `go run` links
// in its build cache (Go 1.24+), keyed by everything that goes into them
// (sources, embedded files, overlay, flags, toolchain), so a second build
// of the same tree is a file copy instead of a link of 30 MB, across test
// packages and runs.
func Build(dir, out string, extra ...string) error {
	args := append(append(append([]string{"run", "-exec", "cp"}, Flags...), extra...), "./cmd/threadengine", out)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		cmd.Dir = root
	}
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s (in %s): %v\n%s", strings.Join(args, " "), cmd.Dir, err, b)
	}
	return nil
}

// moduleRoot is the directory of this module's go.mod.
func moduleRoot() (string, error) {
	b, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(b))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the engine's module")
	}
	return filepath.Dir(gomod), nil
}

// Path builds this module's engine (Build) into a temp dir of the test and
// returns the binary's path; a failed build fails the test.
func Path(t testing.TB) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "threadengine")
	if err := Build("", out); err != nil {
		t.Fatalf("building the engine: %v", err)
	}
	return out
}
