// Package docs checks the repository's Markdown: every relative link must
// name a file or directory that exists, and every #anchor a heading of the
// file it points into, so moving a file or renaming a heading fails
// go test ./... instead of leaving a dead link for the next reader.
package docs

import (
	"bufio"
	"bytes"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
)

func TestMarkdownLinksResolve(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	files := markdownFiles(t, root)
	if len(files) < 10 {
		t.Fatalf("found only %d Markdown files under %s: %v", len(files), root, files)
	}
	for _, problem := range checkLinks(root, files) {
		t.Error(problem)
	}
}

// The checker must be able to fail: a fixture with one good link of each
// kind and one broken link of each kind.
func TestCheckerReportsBrokenLinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", strings.Join([]string{
		"# Top",
		"[ok file](docs/a.md) [ok anchor](docs/a.md#protocol-support-get-threads) [ok self](#top)",
		"[ok dir](docs/) [external](https://example.com/x.md) [mail](mailto:a@b)",
		"[missing file](docs/nope.md) [missing anchor](docs/a.md#nope) [missing self](#nope)",
		"`[in code](gone.md)`",
		"```",
		"[in fence](gone.md)",
		"```",
		"[outside](../../etc/passwd)",
		"[ref]: docs/missing-ref.md",
	}, "\n"))
	write("docs/a.md", "# A\n\n## Protocol support (`GET /threads`)\n")
	got := checkLinks(dir, []string{"README.md", "docs/a.md"})
	want := []string{
		"README.md:4: docs/nope.md: no such file",
		"README.md:4: docs/a.md#nope: no heading with anchor \"nope\" in docs/a.md",
		"README.md:4: #nope: no heading with anchor \"nope\" in README.md",
		"README.md:9: ../../etc/passwd: points outside the repository",
		"README.md:10: docs/missing-ref.md: no such file",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestAnchorsFollowGitHub(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"JavaScript SDK (`sdk/js`)":                                          "javascript-sdk-sdkjs",
		"Protocol support (`GET /threads`)":                                  "protocol-support-get-threads",
		"Durability, idempotency and retries":                                "durability-idempotency-and-retries",
		"`engineUrl`":                                                        "engineurl",
		"Differences from the Threadify Node SDK 0.1.24":                     "differences-from-the-threadify-node-sdk-0124",
		"Browser sign-in through the identity registry (OIDC) and licensing": "browser-sign-in-through-the-identity-registry-oidc-and-licensing",
		"Engine URL (Settings → Engine)":                                     "engine-url-settings--engine",
		"[Linked](x.md) and *emphasis*":                                      "linked-and-emphasis",
		"snake_case stays":                                                   "snake_case-stays",
	}
	for heading, want := range cases {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

// markdownFiles lists the tracked Markdown files (git ls-files), or, outside
// a git checkout, every *.md file except dependencies and test output.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "*.md")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		var files []string
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				if _, err := os.Stat(filepath.Join(root, f)); err == nil { // deleted but not yet committed
					files = append(files, f)
				}
			}
		}
		sort.Strings(files)
		return files
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "data", "artifacts":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

var (
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refDef     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+<?([^\s>]+)>?`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	heading    = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

type link struct {
	line   int
	target string
}

// parse returns the links of a Markdown file (outside code) and the anchors
// its headings get on GitHub.
func parse(src []byte) (links []link, anchors map[string]bool) {
	anchors = map[string]bool{}
	seen := map[string]int{}
	fence := ""
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			a := slug(m[2])
			if k := seen[a]; k > 0 {
				anchors[fmt.Sprintf("%s-%d", a, k)] = true
			} else {
				anchors[a] = true
			}
			seen[a]++
		}
		text := codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(text, -1) {
			links = append(links, link{n, m[1]})
		}
		if m := refDef.FindStringSubmatch(text); m != nil {
			links = append(links, link{n, m[1]})
		}
	}
	return links, anchors
}

var mdLinkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// slug is GitHub's heading anchor: the text without Markdown, lower-cased,
// every character that is not a letter, digit, mark, '_', '-' or space
// removed, and spaces turned into hyphens.
func slug(h string) string {
	h = mdLinkText.ReplaceAllString(h, "$1")
	h = strings.ToLower(h)
	var b strings.Builder
	for _, r := range h {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// checkLinks returns one "file:line: target: problem" per broken link, in
// file and line order.
func checkLinks(root string, files []string) []string {
	type parsed struct {
		links   []link
		anchors map[string]bool
	}
	cache := map[string]*parsed{}
	load := func(rel string) (*parsed, error) {
		if p, ok := cache[rel]; ok {
			return p, nil
		}
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		l, a := parse(src)
		cache[rel] = &parsed{l, a}
		return cache[rel], nil
	}
	var problems []string
	for _, file := range files {
		p, err := load(file)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", file, err))
			continue
		}
		for _, l := range p.links {
			if scheme.MatchString(l.target) {
				continue // http:, https:, mailto: — not checked offline
			}
			pathPart, anchor, _ := strings.Cut(l.target, "#")
			if unescaped, err := url.PathUnescape(pathPart); err == nil {
				pathPart = unescaped
			}
			bad := func(format string, args ...any) {
				problems = append(problems, fmt.Sprintf("%s:%d: %s: %s", file, l.line, l.target, fmt.Sprintf(format, args...)))
			}
			target := file
			if pathPart != "" {
				if strings.HasPrefix(pathPart, "/") {
					target = filepath.ToSlash(filepath.Clean(strings.TrimPrefix(pathPart, "/")))
				} else {
					target = filepath.ToSlash(filepath.Join(filepath.Dir(file), pathPart))
				}
				if target == ".." || strings.HasPrefix(target, "../") {
					bad("points outside the repository")
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(target))); err != nil {
					bad("no such file")
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			tp, err := load(target)
			if err != nil {
				bad("%v", err)
				continue
			}
			if !tp.anchors[strings.ToLower(anchor)] {
				bad("no heading with anchor %q in %s", anchor, target)
			}
		}
	}
	return problems
}
