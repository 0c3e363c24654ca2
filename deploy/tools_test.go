package deploy_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// helmModule is the Helm release the chart is checked with when no helm is
// installed: the go command builds it from the Go module proxy once and
// caches it (about 100 s cold on the 2-core machine, 1.5 s after).
const helmModule = "helm.sh/helm/v3/cmd/helm@v3.22.0"

// offline reports whether a go command failed because a module could not
// be downloaded (no module proxy here): the check is skipped, not failed.
func offline(out []byte) bool {
	s := string(out)
	for _, m := range []string{"dial tcp", "no such host", "proxy.golang.org", "i/o timeout", "connection refused", "Get \"https://"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

var checkBuild struct {
	once    sync.Once
	bin     string
	out     []byte
	err     error
	tempDir string
}

// checkTool builds deploy/check (its own module, see its main.go) once per
// test process (linked once per source, see below).
func checkTool(t *testing.T) string {
	t.Helper()
	checkBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "threadengine-deploy-check-")
		if err != nil {
			checkBuild.err = err
			return
		}
		checkBuild.tempDir = dir
		checkBuild.bin = filepath.Join(dir, "check")
		// go run -exec cp: the go command keeps what go run links in its
		// build cache, so after the first run this is a copy, not a link.
		cmd := exec.Command("go", "run", "-exec", "cp", ".", checkBuild.bin)
		cmd.Dir = "check"
		checkBuild.out, checkBuild.err = cmd.CombinedOutput()
	})
	if checkBuild.err != nil {
		if offline(checkBuild.out) {
			t.Skipf("deploy/check could not be built (its modules are not downloadable here): %s", checkBuild.out)
		}
		t.Fatalf("build deploy/check: %v\n%s", checkBuild.err, checkBuild.out)
	}
	return checkBuild.bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if checkBuild.tempDir != "" {
		os.RemoveAll(checkBuild.tempDir)
	}
	if helmBuild.dir != "" {
		os.RemoveAll(helmBuild.dir)
	}
	os.Exit(code)
}

// runCheck runs deploy/check and returns its JSON report; a refusal fails
// the test with the tool's reasons.
func runCheck(t *testing.T, args ...string) []byte {
	t.Helper()
	out, stderr, err := tryCheck(t, args...)
	if err != nil {
		t.Fatalf("check %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

// tryCheck runs deploy/check and returns stdout, stderr and its error.
func tryCheck(t *testing.T, args ...string) ([]byte, string, error) {
	t.Helper()
	cmd := exec.Command(checkTool(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.Bytes(), stderr.String(), err
}

var helmBuild struct {
	once sync.Once
	dir  string
	bin  string
	out  []byte
	err  error
}

// helm returns the command that runs Helm: an installed helm, else the
// pinned release, linked once per test process by the go command (which
// keeps it in its build cache, so `go run -exec cp` is a copy after the
// first run) instead of a `go run` per invocation loading Helm's module
// graph each time; it skips when neither can run.
func helm(t *testing.T) []string {
	t.Helper()
	if p, err := exec.LookPath("helm"); err == nil {
		return []string{p}
	}
	helmBuild.once.Do(func() {
		if helmBuild.dir, helmBuild.err = os.MkdirTemp("", "threadengine-deploy-helm-"); helmBuild.err != nil {
			return
		}
		helmBuild.bin = filepath.Join(helmBuild.dir, "helm")
		cmd := exec.Command("go", "run", "-exec", "cp", helmModule, helmBuild.bin)
		cmd.Dir = helmBuild.dir // outside the engine's module
		helmBuild.out, helmBuild.err = cmd.CombinedOutput()
	})
	if helmBuild.err != nil {
		if offline(helmBuild.out) {
			t.Skipf("helm is not installed and %s cannot be downloaded: %s", helmModule, helmBuild.out)
		}
		t.Fatalf("go run %s: %v\n%s", helmModule, helmBuild.err, helmBuild.out)
	}
	return []string{helmBuild.bin}
}

// runHelm runs Helm with args from outside the module; it returns stdout and
// the error with stderr.
func runHelm(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	h := helm(t)
	cmd := exec.Command(h[0], append(h[1:], args...)...)
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}
