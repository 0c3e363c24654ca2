package gherkin

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzCompile: no source makes Compile panic or fail, and an accepted one
// compiles into a consistent contract that, written back with Format,
// compiles again to the same content. Seeded with the published examples.
//
//	go test ./domain/gherkin -run '^$' -fuzz FuzzCompile -fuzztime 60s -fuzzminimizetime 2s
//
// (the default minimisation time of new inputs, 60s, shows as stretches of
// 0 execs/sec).
func FuzzCompile(f *testing.F) {
	files, _ := filepath.Glob("testdata/threadify-gherkin/*.feature")
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Add([]byte(head + rule("a", `content "x" must equal a.x`, `content "n" must be a number greater than 1e3`, `next step must be one of "a"`,
		`the next step must start within "1.5d"`, "this step may be retried at most 2 times")))
	f.Fuzz(func(t *testing.T, src []byte) {
		res, err := Compile(src, nil)
		if err != nil {
			t.Fatalf("error without a resolver: %v", err)
		}
		if len(res.Problems) > 0 {
			for _, p := range res.Problems {
				if p.Message == "" {
					t.Fatalf("empty problem %+v", p)
				}
			}
			return
		}
		c := res.Contract
		steps := map[string]bool{}
		for _, s := range c.Steps {
			steps[s.Name] = true
		}
		for _, s := range c.Steps {
			if !contains(c.Parties, s.Owner) {
				t.Fatalf("owner %q is not a party", s.Owner)
			}
			for _, d := range s.DependsOn {
				if !steps[d] || d == s.Name {
					t.Fatalf("step %q depends on %q", s.Name, d)
				}
			}
		}
		for _, tr := range c.Transitions {
			for _, to := range append([]string{tr.From}, tr.To...) {
				if !steps[to] {
					t.Fatalf("transition names %q", to)
				}
			}
		}
		for _, e := range append(append([]string{}, c.EntryPoints...), c.TerminalSteps...) {
			if !steps[e] {
				t.Fatalf("entry or terminal %q", e)
			}
		}
		again, err := Compile([]byte(Format(c)), nil)
		if err != nil || len(again.Problems) > 0 {
			t.Fatalf("formatted source refused: %v %v\n%s", again.Problems, err, Format(c))
		}
		if again.Contract.ContentHash() != c.ContentHash() || again.Contract.Name != c.Name ||
			again.Contract.Version != c.Version || again.Contract.Description != c.Description {
			t.Fatalf("round trip changed the contract:\n%+v\n%+v", c, again.Contract)
		}
	})
}
