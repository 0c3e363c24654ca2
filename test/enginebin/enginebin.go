// Package enginebin gives tests that run the engine as a process its
// binary, linked once for every test package of a run and for the next run.
package enginebin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// flags are what the engine's binary is built with: the running test
// binary's own -trimpath and CGO_ENABLED, so every package of the engine
// and its dependencies is the one the go command already compiled for the
// tests (built with other flags, a cold build cache compiled them all a
// second time: 90 s of CPU on two cores), and the Dockerfile's
// -ldflags="-s -w", which only the link reads. .ci/run builds the tests
// with the Dockerfile's CGO_ENABLED=0 and -trimpath, so deploy's image
// binary shares the same compiled packages, and with -trimpath they do not
// depend on the checkout's path: a fresh clone finds them in the cache.
func flags() (args []string, env string) {
	trim, cgo := false, os.Getenv("CGO_ENABLED")
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "-trimpath":
				trim = s.Value == "true"
			case "CGO_ENABLED":
				cgo = s.Value
			}
		}
	}
	if trim {
		args = append(args, "-trimpath")
	}
	args = append(args, "-ldflags=-s -w")
	if cgo != "" {
		env = "CGO_ENABLED=" + cgo
	}
	return args, env
}

// Build writes cmd/threadengine of the module at dir ("" for this one) to
// out, built with flags and extra go build flags (e.g. -overlay). It runs
// `go run -exec cp`: the go command keeps the executables `go run` links
// in its build cache (Go 1.24+), keyed by everything that goes into them
// (sources, embedded files, overlay, flags, toolchain), so a second build
// of the same tree is a file copy instead of a link of 30 MB, across test
// packages and runs.
func Build(dir, out string, extra ...string) error {
	fl, env := flags()
	args := append(append(append([]string{"run", "-exec", "cp"}, fl...), extra...), "./cmd/threadengine", out)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		cmd.Dir = root
	}
	cmd.Env = os.Environ()
	if env != "" {
		cmd.Env = append(cmd.Env, env)
	}
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
