package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var repoPath = regexp.MustCompile("`((?:domain|ports|app|adapters|cmd|db|web|schema|sdk|test)/[A-Za-z0-9_./-]*)`")

// TestArchitecturePathsExist: every file or directory the architecture page
// names (as `path` in code) exists, so the page cannot send a newcomer to a
// file that was renamed or removed.
func TestArchitecturePathsExist(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	src, err := os.ReadFile(filepath.Join(root, "docs", "contributors", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i, line := range strings.Split(string(src), "\n") {
		for _, m := range repoPath.FindAllStringSubmatch(line, -1) {
			n++
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(m[1]))); err != nil {
				t.Errorf("docs/contributors/architecture.md:%d names %s, which does not exist", i+1, m[1])
			}
		}
	}
	if n < 30 {
		t.Fatalf("found only %d paths in the architecture page", n)
	}
}
