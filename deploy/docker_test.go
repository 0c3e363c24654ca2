package deploy_test

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/test/enginetest"
)

type dockerfile struct {
	Stages []struct {
		Name     string   `json:"name"`
		Base     string   `json:"base"`
		Commands []string `json:"commands"`
	} `json:"stages"`
}

// parseDockerfile runs BuildKit's parser and build checks (deploy/check).
func parseDockerfile(t *testing.T, path string) dockerfile {
	t.Helper()
	var d dockerfile
	if err := json.Unmarshal(runCheck(t, "dockerfile", path), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// The Dockerfile passes BuildKit's build checks (what `docker build
// --check` reports) and the image rules a reviewer would ask for.
func TestDockerfileLint(t *testing.T) {
	t.Parallel()
	d := parseDockerfile(t, "../Dockerfile")
	if len(d.Stages) != 2 || d.Stages[0].Name != "build" {
		t.Fatalf("want a build stage and a final stage, got %+v", d.Stages)
	}
	build, final := d.Stages[0], d.Stages[1]
	pinned := regexp.MustCompile(`^[a-z0-9./-]+:[A-Za-z0-9._${}-]+$`)
	for _, s := range d.Stages {
		if !pinned.MatchString(s.Base) || strings.HasSuffix(s.Base, ":latest") {
			t.Errorf("stage %q: base image %q is not pinned to a tag", s.Name, s.Base)
		}
	}
	if !strings.HasPrefix(final.Base, "gcr.io/distroless/static") && final.Base != "scratch" {
		t.Errorf("final image %q: want distroless static or scratch (a static binary needs nothing else)", final.Base)
	}
	has := func(cmds []string, prefix string) []string {
		var out []string
		for _, c := range cmds {
			if strings.HasPrefix(c, prefix) {
				out = append(out, c)
			}
		}
		return out
	}
	for _, c := range append(has(build.Commands, "ADD"), has(final.Commands, "ADD")...) {
		t.Errorf("%s: use COPY (ADD fetches URLs and unpacks archives)", c)
	}
	users := has(final.Commands, "USER")
	if len(users) != 1 || !regexp.MustCompile(`^USER [1-9][0-9]*(:[1-9][0-9]*)?$`).MatchString(users[0]) {
		t.Errorf("final stage: want one numeric non-root USER (Kubernetes runAsNonRoot checks numbers), got %v", users)
	}
	hc := has(final.Commands, "HEALTHCHECK")
	if len(hc) != 1 || !strings.Contains(hc[0], `CMD ["/usr/local/bin/threadengine", "healthcheck"]`) {
		t.Errorf("final stage: want a HEALTHCHECK that runs the binary's healthcheck in exec form, got %v", hc)
	}
	if ep := has(final.Commands, "ENTRYPOINT"); len(ep) != 1 || !strings.HasPrefix(ep[0], `ENTRYPOINT ["`) {
		t.Errorf("final stage: want an exec-form ENTRYPOINT, got %v", ep)
	}
	for _, c := range has(final.Commands, "COPY") {
		if !strings.Contains(c, "--from=build") {
			t.Errorf("%s: the final stage copies only from the build stage", c)
		}
	}
	env, goBuild := buildFlags(t)
	if !slices.Contains(env, "CGO_ENABLED=0") {
		t.Errorf("build stage: want ENV CGO_ENABLED=0 (a static binary), got %v", env)
	}
	for _, want := range []string{"-trimpath", "-X main.version=${VERSION}", "-X main.commit=${COMMIT}"} {
		if !strings.Contains(strings.Join(goBuild, " "), want) {
			t.Errorf("go build %v: missing %s", goBuild, want)
		}
	}

	// The checks can fail: BuildKit reports these mistakes.
	bad := filepath.Join(t.TempDir(), "Dockerfile")
	if err := os.WriteFile(bad, []byte("FROM golang:1.26 as Build\nRUN echo\nfrom scratch\nCMD serve\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := tryCheck(t, "dockerfile", bad)
	for _, rule := range []string{"FromAsCasing", "StageNameCasing", "ConsistentInstructionCasing", "JSONArgsRecommended"} {
		if err == nil || !strings.Contains(stderr, rule) {
			t.Errorf("a Dockerfile breaking %s passed the lint: %v %s", rule, err, stderr)
		}
	}
}

// buildFlags returns the build stage's ENV settings and the arguments of
// its `RUN go build` line, as written in the Dockerfile.
func buildFlags(t *testing.T) (env []string, args []string) {
	t.Helper()
	d := parseDockerfile(t, "../Dockerfile")
	for _, c := range d.Stages[0].Commands {
		switch {
		case strings.HasPrefix(c, "ENV "):
			env = append(env, shellWords(t, strings.TrimPrefix(c, "ENV "))...)
		case strings.HasPrefix(c, "RUN go build "):
			args = shellWords(t, strings.TrimPrefix(c, "RUN go build "))
		}
	}
	if args == nil {
		t.Fatal("Dockerfile: no `RUN go build` line in the build stage")
	}
	return env, args
}

// shellWords splits a shell command line into words (double quotes only,
// which is all the Dockerfile uses).
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			if r == '\'' || r == '\\' {
				t.Fatalf("Dockerfile build line uses shell syntax this test does not parse: %s", s)
			}
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quotes: %s", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// The image's binary, built as the Dockerfile builds it (its ENV and its
// go build flags, read from the file so they cannot drift, from a build
// context filtered by .dockerignore), is static, reports the version and
// commit passed as build arguments and the schema it embeds, serves, and
// its healthcheck command tells a serving engine from a stopped one.
func TestImageBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the engine binary")
	}
	t.Parallel()
	env, args := buildFlags(t)
	const version, commit = "v9.9.9-test", "0123456789abcdef0123456789abcdef01234567"
	dir := t.TempDir()
	ctx := filepath.Join(dir, "context")
	var copied []string
	if err := json.Unmarshal(runCheck(t, "context", "..", ctx), &copied); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"go.mod", "go.sum", "cmd/threadengine/main.go", "db/postgres/00030_schema_compat.sql", "web/index.html", "schema/threadengine.graphqls"} {
		if !slices.Contains(copied, want) {
			t.Errorf(".dockerignore leaves %s out of the build context", want)
		}
	}
	for _, c := range copied {
		if strings.HasPrefix(c, ".git/") || strings.HasPrefix(c, "docs/") || strings.Contains(c, "node_modules/") || strings.HasPrefix(c, "data/") {
			t.Errorf(".dockerignore lets %s into the build context", c)
		}
	}

	bin := filepath.Join(dir, "threadengine")
	var buildArgs []string
	for i := 0; i < len(args); i++ {
		a := strings.NewReplacer("${VERSION}", version, "${COMMIT}", commit).Replace(args[i])
		switch {
		case a == "-o":
			i++ // the image's path; build into the temp dir instead
		case strings.HasPrefix(a, "./"):
			// the package, added last
		default:
			buildArgs = append(buildArgs, a)
		}
	}
	pkg := args[len(args)-1]
	cmd := exec.Command("go", append(append([]string{"build"}, buildArgs...), "-o", bin, pkg)...)
	cmd.Dir, cmd.Env = ctx, append(os.Environ(), env...)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", cmd.Args, err, out)
	}
	t.Logf("go build %s (flags from the Dockerfile, env %v): %s", strings.Join(cmd.Args[2:], " "), env, time.Since(start).Round(time.Millisecond))

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has a program interpreter: it is dynamically linked and would not run on a static image")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary links %v", libs)
	}
	if f.Section(".debug_info") != nil {
		t.Error("the binary keeps DWARF (-ldflags -s -w leaves it out)")
	}
	f.Close()

	out, err := exec.Command(bin, "version").CombinedOutput()
	want := fmt.Sprintf("version: %s\ncommit: %s\nschema: %d\n", version, commit, sqldb.EmbeddedSchema(sqldb.Postgres))
	if err != nil || !strings.HasPrefix(string(out), want) {
		t.Fatalf("version: %v\n%s\nwant it to start with\n%s", err, out, want)
	}

	// serve with the embedded default database (./data under the working
	// directory, as in the image), then probe it with the binary itself.
	work := t.TempDir()
	baseEnv := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work}
	runEnv := append(baseEnv[:len(baseEnv):len(baseEnv)], "THREADENGINE_SERVER__LISTEN="+enginetest.FreeAddr(t), "THREADENGINE_LOG__LEVEL=warn")
	probe := func() ([]byte, error) {
		c := exec.Command(bin, "healthcheck")
		c.Env, c.Dir = runEnv, work
		return c.CombinedOutput()
	}
	if out, err := probe(); err == nil {
		t.Fatalf("healthcheck passed with no engine running: %s", out)
	}
	anyPort, addressFile := enginetest.AnyPort(t)
	srv := exec.Command(bin, "serve")
	srv.Env, srv.Dir = append(append(baseEnv[:len(baseEnv):len(baseEnv)], "THREADENGINE_LOG__LEVEL=info"), anyPort...), work
	listening := waitForLine(t, srv, "threadengine listening")
	defer func() { _ = srv.Process.Kill(); _, _ = srv.Process.Wait() }()
	if w := <-listening; !w.found {
		t.Fatalf("the engine stopped before listening:\n%s", w.out)
	}
	runEnv = append(baseEnv[:len(baseEnv):len(baseEnv)], "THREADENGINE_SERVER__LISTEN="+enginetest.BoundAddr(t, addressFile, srv.Process), "THREADENGINE_LOG__LEVEL=warn")
	// It logs once its listener is bound: the probe's connection waits in
	// the backlog until Serve accepts it.
	if out, err := probe(); err != nil || !strings.Contains(string(out), `"status":"ready"`) {
		t.Fatalf("healthcheck of a serving engine: %v %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(work, "data", "threadengine.db")); err != nil {
		t.Errorf("the embedded database is not under the working directory's ./data: %v", err)
	}
	_ = srv.Process.Kill()
	_, _ = srv.Process.Wait()
	if out, err := probe(); err == nil {
		t.Fatalf("healthcheck passed after the engine stopped: %s", out)
	}
	st := exec.Command(bin, "migrate", "status")
	st.Env, st.Dir = runEnv, work
	if out, err := st.CombinedOutput(); err != nil || !strings.Contains(string(out), "00030_schema_compat.sql") ||
		!strings.Contains(string(out), "it may serve") {
		t.Fatalf("migrate status: %v\n%s", err, out)
	}
}

// lineWait is what waitForLine reports: the output so far, and whether the
// wanted line came before the stream ended.
type lineWait struct {
	out   string
	found bool
}

// waitForLine starts cmd with its stderr read line by line; the channel
// gets one report, when a line contains want or when the stream ends.
func waitForLine(t *testing.T, cmd *exec.Cmd, want string) <-chan lineWait {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close() // the child holds its copy: EOF when it exits
	ch := make(chan lineWait, 1)
	go func() {
		defer r.Close()
		var all strings.Builder
		sc := bufio.NewScanner(r)
		found := false
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			if !found && strings.Contains(sc.Text(), want) {
				found = true
				ch <- lineWait{all.String(), true}
			}
		}
		if !found {
			ch <- lineWait{all.String(), false}
		}
	}()
	return ch
}
