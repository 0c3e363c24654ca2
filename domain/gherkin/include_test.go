package gherkin

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/domain"
)

// published resolves includes from compiled sources keyed "name:version".
func published(t *testing.T, sources map[string]string) Resolver {
	t.Helper()
	byRef := map[string]domain.Contract{}
	names := map[string]bool{}
	for ref, src := range sources {
		c := mustCompile(t, src)
		byRef[ref] = c
		names[c.Name] = true
	}
	return func(name string, version int) (Published, error) {
		c, ok := byRef[name+":"+strconv.Itoa(version)]
		return Published{Contract: c, Found: ok, Exists: names[name]}, nil
	}
}

const approvals = `Feature: approvals
Background:
  Given the thread must finish within "60m"
Rule: Approve
  When step "approval" is submitted
  Then owner must be "reviewer"
  And this step is an entry point
Group: "reviews"
  Given parallel steps are "approval", "approval2"
Rule: Approve again
  When step "approval2" is submitted
  Then owner must be "reviewer"
`

func TestIncludeComposes(t *testing.T) {
	t.Parallel()
	resolve := published(t, map[string]string{"approvals:1": approvals})
	src := `Feature: payments
Include: approvals:1
Background:
  Given the thread must finish within "1h"
Rule: Charge
  When step "charge" is submitted
  Then owner must be "processor"
  And step "approval" must succeed before each invocation
  And this step is terminal
`
	res, err := Compile([]byte(src), resolve)
	if err != nil || len(res.Problems) > 0 {
		t.Fatalf("problems %v err %v", res.Problems, err)
	}
	c := res.Contract
	if got := stepNames(c); !reflect.DeepEqual(got, []string{"charge", "approval", "approval2"}) {
		t.Errorf("steps %v", got)
	}
	// 60m and 1h are the same duration; the included entry point is
	// inherited; the contract's terminal step wins.
	if c.MaxDuration != time.Hour || !reflect.DeepEqual(c.EntryPoints, []string{"approval"}) || !reflect.DeepEqual(c.TerminalSteps, []string{"charge"}) ||
		!reflect.DeepEqual(c.Parties, []string{"processor", "reviewer"}) || len(c.Groups) != 1 || !reflect.DeepEqual(res.Includes, []Include{{"approvals", 1}}) {
		t.Errorf("composed %+v", c)
	}
}

func TestIncludeProblems(t *testing.T) {
	t.Parallel()
	resolve := published(t, map[string]string{
		"approvals:1": approvals,
		"slow:1":      "Feature: slow\nBackground:\n  Given the thread must finish within \"2h\"\n" + rule("wait"),
		"dupgroup:1":  "Feature: dupgroup\n" + rule("c") + rule("d") + "Group: \"reviews\"\n  Given parallel steps are \"c\", \"d\"\n",
		"same:1":      "Feature: same\n" + rule("charge"),
	})
	base := func(includes ...string) string {
		s := "Feature: payments\n"
		for _, in := range includes {
			s += "Include: " + in + "\n"
		}
		return s + rule("charge", "this step is terminal")
	}
	var many []string
	for i := 0; i < 17; i++ {
		many = append(many, "c"+strconv.Itoa(i)+":1")
	}
	tests := []struct {
		name, src string
		line      int
		msg       string
	}{
		{"missing contract", base("nothing:1"), 2, `Included contract "nothing" was not found`},
		{"missing version", base("approvals:2"), 2, `Included contract "approvals" version 2 was not found`},
		{"too many", base(many...), 18, "A contract may include at most 16 other contracts"},
		{"durations", base("approvals:1", "slow:1"), 3, "Included contracts have conflicting thread durations"},
		{"groups", base("approvals:1", "dupgroup:1"), 3, `Duplicate group ID "reviews" in combined contract`},
	}
	for _, tt := range tests {
		res, err := Compile([]byte(tt.src), resolve)
		if err != nil || len(res.Problems) == 0 || res.Problems[0].Line != tt.line || res.Problems[0].Message != tt.msg || res.Problems[0].Field != "includes" {
			t.Errorf("%s: %v %v", tt.name, res.Problems, err)
		}
	}
	res, _ := Compile([]byte(base("same:1")), resolve)
	if len(res.Problems) == 0 || res.Problems[0].Message != "Duplicate step ID found. Each step must have a unique ID" || res.Problems[0].Line != 2 {
		t.Errorf("duplicate step: %v", res.Problems)
	}
	boom := errors.New("database down")
	if _, err := Compile([]byte(base("approvals:1")), func(string, int) (Published, error) { return Published{}, boom }); !errors.Is(err, boom) {
		t.Errorf("lookup failure: %v", err)
	}
}

// More than 512 steps once expanded is refused.
func TestIncludeStepLimit(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("Feature: big\n")
	for i := 0; i < 512; i++ {
		b.WriteString(rule("s" + strconv.Itoa(i)))
	}
	resolve := published(t, map[string]string{"big:1": b.String()})
	res, _ := Compile([]byte("Feature: more\nInclude: big:1\n"+rule("extra")), resolve)
	if len(res.Problems) == 0 || res.Problems[0].Message != "Expanded contract exceeds 512 steps" {
		t.Errorf("problems %v", res.Problems)
	}
}

// Composition checks refuse a contract with includes and warn otherwise.
func TestCompositionChecks(t *testing.T) {
	t.Parallel()
	contradictory := rule("a", "this step is an entry point", `content "c" must equal "x"`, `content "c" must equal "y"`) +
		rule("b", `step "a" must have succeeded`, "this step is terminal")
	res := compile(t, head+contradictory)
	if len(res.Problems) > 0 || len(res.Warnings) != 1 || res.Warnings[0].Message != `content field "c" has no value satisfying all literal rules` {
		t.Errorf("warnings %v problems %v", res.Warnings, res.Problems)
	}
	resolve := published(t, map[string]string{"approvals:1": approvals})
	res, _ = Compile([]byte("Feature: x\nInclude: approvals:1\n"+contradictory), resolve)
	if len(res.Problems) != 1 || res.Problems[0].Field != "steps.a.content_rules" {
		t.Errorf("problems %v", res.Problems)
	}
	tests := []struct{ name, src, msg string }{
		{"bounds", rule("a", `content "n" must be a number greater than 5`, `content "n" must be a number less than or equal to 5`), `content field "n" has incompatible numeric bounds`},
		{"number and boolean", rule("a", `content "n" must be a number`, `content "n" must be a boolean`), `content field "n" cannot be both a number and a boolean`},
		{"one of", rule("a", `content "n" must be one of "a", "b"`, `content "n" must equal "c"`), `content field "n" has no value satisfying all literal rules`},
		{"boolean", rule("a", `content "n" must be a boolean`, `content "n" must match regex "^x"`), `content field "n" has no boolean value satisfying all rules`},
		{"terminal prerequisite", rule("a", "this step is terminal", "this step is an entry point") + rule("b", `step "a" must have succeeded`, "this step is terminal"), `Step "b" depends on terminal step "a", which completes the thread`},
		{"unreachable", rule("a", "this step is an entry point", `next step must be one of "b"`) + rule("b", `step "c" must have succeeded`, `next step must be one of "c"`) + rule("c", "this step is terminal", `next step must be one of "b"`),
			`Step "b" cannot be reached from an entry point before the thread completes; check its prerequisites and strict transitions`},
	}
	for _, tt := range tests {
		res := compile(t, head+tt.src)
		found := false
		for _, w := range res.Warnings {
			found = found || w.Message == tt.msg
		}
		if !found || len(res.Problems) > 0 {
			t.Errorf("%s: warnings %v problems %v", tt.name, res.Warnings, res.Problems)
		}
	}
}

func stepNames(c domain.Contract) []string {
	var out []string
	for _, s := range c.Steps {
		out = append(out, s.Name)
	}
	return out
}
