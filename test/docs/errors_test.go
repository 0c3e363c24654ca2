package docs

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/threadengine/engine/domain"
)

// TestErrorTableListsTheRegistry: docs/integrators/errors.md's table of
// every public code lists exactly domain's registry, each with the HTTP
// statuses of the kinds the code is used with.
func TestErrorTableListsTheRegistry(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	documented := errorTable(t, filepath.Join(root, "docs", "integrators", "errors.md"))
	for _, code := range domain.Codes() {
		var statuses []string
		for _, k := range domain.KindsOf(code) {
			statuses = append(statuses, strconv.Itoa(k.HTTPStatus()))
		}
		sort.Strings(statuses)
		want := strings.Join(statuses, ", ")
		got, ok := documented[string(code)]
		switch {
		case !ok:
			t.Errorf("code %s (HTTP %s) is missing from docs/integrators/errors.md", code, want)
		case got != want:
			t.Errorf("code %s: the docs say HTTP %s, the registry's kinds give %s", code, got, want)
		}
		delete(documented, string(code))
	}
	for code := range documented {
		t.Errorf("docs/integrators/errors.md lists %s, which is not in domain's registry", code)
	}
}

var tableRow = regexp.MustCompile("^\\| `([^`]+)` \\| ([0-9, ]+) \\|")

// errorTable reads the rows of the table under "## Every public code":
// code → its HTTP column.
func errorTable(t *testing.T, path string) map[string]string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Every public code"
			continue
		}
		if !in {
			continue
		}
		if m := tableRow.FindStringSubmatch(line); m != nil {
			if _, dup := rows[m[1]]; dup {
				t.Errorf("%s is listed twice", m[1])
			}
			rows[m[1]] = strings.TrimSpace(m[2])
		}
	}
	if len(rows) < 10 {
		t.Fatalf("found %d rows under \"## Every public code\" in %s", len(rows), path)
	}
	return rows
}

var (
	codeDecl   = regexp.MustCompile(`^\s*(Code\w+)\s+Code\s*=\s*"([^"]+)"`)
	foreignDef = regexp.MustCompile(`domain\.Code\s*=\s*"|domain\.Code\("|Code:\s*"`)
	kindCode   = regexp.MustCompile(`\b(?:E|NewBase)\(\s*(?:domain\.)?(Kind\w+),\s*(?:domain\.)?(Code\w+)|Kind:\s*(?:domain\.)?(Kind\w+),\s*Code:\s*(?:domain\.)?(Code\w+)|\bLimitExceeded\(\s*(?:domain\.)?(Kind\w+)`)
)

// TestErrorCodesLiveInTheRegistry: no package but domain/codes.go declares
// a code, and every error the source builds (E, NewBase, LimitExceeded or
// an Error literal) pairs its code with a kind the registry lists for it,
// so the table above is the whole truth.
func TestErrorCodesLiveInTheRegistry(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	kinds := map[string]domain.Kind{
		"KindInternal": domain.KindInternal, "KindInvalid": domain.KindInvalid, "KindNotFound": domain.KindNotFound,
		"KindConflict": domain.KindConflict, "KindUnauthenticated": domain.KindUnauthenticated,
		"KindForbidden": domain.KindForbidden, "KindUnavailable": domain.KindUnavailable, "KindTooLarge": domain.KindTooLarge,
		"KindUnprocessable": domain.KindUnprocessable, "KindRateLimited": domain.KindRateLimited,
		"KindMethodNotAllowed": domain.KindMethodNotAllowed, "KindUnsupportedMedia": domain.KindUnsupportedMedia,
	}
	if len(kinds) != len(domain.Kinds()) {
		t.Fatalf("the test knows %d kinds, domain has %d: add the new one here", len(kinds), len(domain.Kinds()))
	}
	codes := map[string]domain.Code{}
	src, err := os.ReadFile(filepath.Join(root, "domain", "codes.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(src), "\n") {
		if m := codeDecl.FindStringSubmatch(line); m != nil {
			codes[m[1]] = domain.Code(m[2])
		}
	}
	if len(codes) != len(domain.Codes()) {
		t.Fatalf("domain/codes.go declares %d codes, the registry holds %d", len(codes), len(domain.Codes()))
	}
	pairs := 0
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", ".sdk", "data", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for n, line := range strings.Split(string(body), "\n") {
			if rel != "domain/codes.go" && (foreignDef.MatchString(line) || (strings.HasPrefix(rel, "domain/") && codeDecl.MatchString(line))) {
				t.Errorf("%s:%d: declares an error code outside domain/codes.go: %s", rel, n+1, strings.TrimSpace(line))
			}
			for _, m := range kindCode.FindAllStringSubmatch(line, -1) {
				kindName, codeName := m[1]+m[3]+m[5], m[2]+m[4]
				if m[5] != "" {
					codeName = "CodeLimitExceeded"
				}
				k, okK := kinds[kindName]
				c, okC := codes[codeName]
				if !okK || !okC {
					t.Errorf("%s:%d: unknown kind or code in %q", rel, n+1, m[0])
					continue
				}
				pairs++
				if !domain.Registered(c, k) {
					t.Errorf("%s:%d: %s is used with kind %s, which domain/codes.go does not list for it", rel, n+1, c, k)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pairs < 50 {
		t.Fatalf("found only %d kind/code pairs in the source", pairs)
	}
}
