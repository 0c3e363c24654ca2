package gherkin

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/domain"
)

// The published examples: valid ones compile with no problem and no
// warning; each invalid one's first problem is its .expect.txt (the
// reference engine's preview errors[0]), on the expected line.
func TestPublishedFixtures(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/threadify-gherkin/*.feature")
	if err != nil || len(files) != 11 {
		t.Fatalf("fixtures: %v %v", files, err)
	}
	// Validation problems carry no line in the reference text: the line of
	// the statement concerned.
	lines := map[string]int{"invalid_dependency_cycle": 7, "invalid_optional_checked_field": 15}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".feature")
		src, _ := os.ReadFile(f)
		res, err := Compile(src, nil)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(name, "valid_") {
			if len(res.Problems)+len(res.Warnings) > 0 {
				t.Errorf("%s: problems %v warnings %v", name, res.Problems, res.Warnings)
			}
			continue
		}
		want, _ := os.ReadFile(strings.TrimSuffix(f, ".feature") + ".expect.txt")
		if len(res.Problems) == 0 {
			t.Errorf("%s: accepted", name)
			continue
		}
		p := res.Problems[0]
		if got := p.ReferenceText(); got != strings.TrimSpace(string(want)) {
			t.Errorf("%s: first problem %q, want %q", name, got, want)
		}
		if l, ok := lines[name]; ok && p.Line != l {
			t.Errorf("%s: line %d, want %d", name, p.Line, l)
		}
		if len(res.Problems) != 1 {
			t.Errorf("%s: %d problems, want 1: %v", name, len(res.Problems), res.Problems)
		}
	}
}

func compile(t *testing.T, src string) Result {
	t.Helper()
	res, err := Compile([]byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func mustCompile(t *testing.T, src string) domain.Contract {
	t.Helper()
	res := compile(t, src)
	if len(res.Problems) > 0 {
		t.Fatalf("problems: %v\n%s", res.Problems, src)
	}
	return res.Contract
}

const head = "Feature: shop\n"

// rule is a minimal Rule block for step with extra clauses.
func rule(step string, clauses ...string) string {
	s := "Rule: " + step + "\n  When step \"" + step + "\" is submitted\n  Then owner must be \"svc\"\n"
	for _, c := range clauses {
		s += "  And " + c + "\n"
	}
	return s
}

// Every clause compiles into the model.
func TestClausesCompile(t *testing.T) {
	t.Parallel()
	src := head + `Version: 3
Description: A shop.
Background:
  Given the thread must finish within "2d"
  And multiple terminal steps are allowed
  And multiple terminal severity is "error"
  And threads lock to this version
Step: "pay"
  Description: "Money taken."
  Required context: "amount" means "Amount."
  Optional context: "note"
` + rule("order", `this step is an entry point`, `next step must be one of "pay", "cancel"`,
		`the next step must start within "1.5h"`, `this step may be retried at most 3 times`,
		`content "id" must match regex "^O-[0-9]+$"`, `step type is "external"`) +
		rule("pay", `step "order" must have succeeded`, `content "amount" must be a number greater than or equal to 0.01`,
			`content "amount" must be a number less than 1e6`, `content "currency" must be one of "GBP", "EUR"`,
			`content "ref" must equal order.id`, `content "kind" must equal "card"`, `content "ok" must be a boolean`,
			`content "n" must be a number`, `content "n" must be a number greater than -5`, `content "n" must be a number less than or equal to 10`,
			`content "who" must not be empty`, `this step must finish within "30s"`, `this step is terminal`, `next step must be one of "cancel"`) +
		rule("cancel", `step "order" must succeed before each invocation`, `content "why" must satisfy question "Is the reason acceptable?"`,
			`semantic context for content "why" is "order", "pay"`, `semantic confidence for content "why" is 0.9`,
			`content "x" is optional`, `content "y" must be present`, `this step is terminal`, `step type is "human_in_loop"`) +
		`Group: "checks"
  Given parallel steps are "pay", "cancel"
  And all parallel steps must succeed
  And combined duration must be within "5m"
`
	c := mustCompile(t, src)
	if c.Name != "shop" || c.Version != 3 || c.Description != "A shop." || c.MaxDuration != 48*time.Hour ||
		!c.AllowMultipleTerminals || c.MultipleTerminalsSeverity != domain.SeverityCritical || !c.ThreadsLockToVersion || c.FreeOrder {
		t.Errorf("contract = %+v", c)
	}
	if !reflect.DeepEqual(c.EntryPoints, []string{"order"}) || !reflect.DeepEqual(c.TerminalSteps, []string{"pay", "cancel"}) ||
		c.EntryPointsDerived || c.TerminalStepsDerived || !reflect.DeepEqual(c.Parties, []string{"svc"}) {
		t.Errorf("entries %v terminals %v parties %v", c.EntryPoints, c.TerminalSteps, c.Parties)
	}
	want := []domain.Transition{
		{From: "order", To: []string{"pay", "cancel"}, MaxRetries: 3, CanRetry: true, Timeout: 90 * time.Minute},
		{From: "pay", To: []string{"cancel"}, CanRetry: true},
	}
	if !reflect.DeepEqual(c.Transitions, want) {
		t.Errorf("transitions = %+v", c.Transitions)
	}
	order, _ := c.Step("order")
	pay, _ := c.Step("pay")
	cancel, _ := c.Step("cancel")
	if order.Type != domain.StepTypeExternal || order.Description != "order" || !reflect.DeepEqual(order.Required, []string{"id"}) {
		t.Errorf("order = %+v", order)
	}
	if pay.Description != "Money taken." || pay.Timeout != 30*time.Second || !reflect.DeepEqual(pay.DependsOn, []string{"order"}) ||
		!reflect.DeepEqual(pay.Required, []string{"amount", "currency", "ref", "kind", "ok", "n", "who"}) ||
		!reflect.DeepEqual(pay.Optional, []string{"note"}) || pay.ContextMeanings["amount"] != "Amount." || len(pay.ContentRules) != 10 {
		t.Errorf("pay = %+v", pay)
	}
	if r := pay.ContentRules[3]; r.Operator != domain.OpEquals || r.Reference == nil || *r.Reference != (domain.StepFieldRef{Step: "order", Field: "id"}) {
		t.Errorf("reference rule = %+v", r)
	}
	if r := pay.ContentRules[2]; r.Operator != domain.OpOneOf || !reflect.DeepEqual(r.Values, []string{"GBP", "EUR"}) {
		t.Errorf("one_of rule = %+v", r)
	}
	if cancel.Type != domain.StepTypeHumanInLoop || !reflect.DeepEqual(cancel.FreshDependsOn, []string{"order"}) ||
		!reflect.DeepEqual(cancel.DependsOn, []string{"order", "pay"}) || !reflect.DeepEqual(cancel.Required, []string{"y", "why"}) ||
		!reflect.DeepEqual(cancel.Optional, []string{"x"}) {
		t.Errorf("cancel = %+v", cancel)
	}
	if want := (domain.SemanticRule{Field: "why", Question: "Is the reason acceptable?", ContextSteps: []string{"order", "pay"}, MinProbability: 0.9}); !reflect.DeepEqual(cancel.SemanticRules, []domain.SemanticRule{want}) {
		t.Errorf("semantic = %+v", cancel.SemanticRules)
	}
	if want := []domain.ContractGroup{{Name: "checks", Steps: []string{"pay", "cancel"}, AllMustSucceed: true, MaxCombinedDuration: 5 * time.Minute}}; !reflect.DeepEqual(c.Groups, want) {
		t.Errorf("groups = %+v", c.Groups)
	}
}

// Without entry or terminal clauses they are derived from the topology
// (transitions and prerequisites); without next-step rules order is free.
func TestDerivedEndpointsAndFreeOrder(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, head+rule("a")+rule("b", `step "a" must have succeeded`)+rule("c", `step "b" must have succeeded`)+rule("d"))
	if !c.FreeOrder || !c.EntryPointsDerived || !c.TerminalStepsDerived ||
		!reflect.DeepEqual(c.EntryPoints, []string{"a", "d"}) || !reflect.DeepEqual(c.TerminalSteps, []string{"c", "d"}) {
		t.Errorf("entries %v terminals %v free %v", c.EntryPoints, c.TerminalSteps, c.FreeOrder)
	}
}

// The current Step block syntax and the legacy Given/And one compile alike.
func TestStepBlockSyntaxes(t *testing.T) {
	t.Parallel()
	current := head + "Step: \"s\"\n  Description: \"Done.\"\n  Required context: \"a\" means \"A.\"\n  Optional context: \"b\"\n" + rule("s")
	legacy := head + "Step: \"s\"\n  Given required context \"a\" means \"A.\"\n  And description is \"Done.\"\n  And optional context \"b\"\n" + rule("s")
	a, b := mustCompile(t, current), mustCompile(t, legacy)
	if !reflect.DeepEqual(a, b) || a.Steps[0].Description != "Done." || a.Steps[0].ContextMeanings["a"] != "A." {
		t.Errorf("current %+v\nlegacy %+v", a, b)
	}
}

// Quoted values take Go escapes; comments and indentation do not matter.
func TestQuotingCommentsAndLayout(t *testing.T) {
	t.Parallel()
	src := "\ufeff# leading comment\n\n" + head + "  # indented comment\r\n\tRule: Pay\r\n When step \"p\\u00e9 \\\"x\\\"\" is submitted\r\n   Then owner must be \"a\\tb\"\r\n"
	c := mustCompile(t, src)
	if c.Steps[0].Name != "pé \"x\"" || c.Steps[0].Owner != "a\tb" {
		t.Errorf("steps = %+v", c.Steps)
	}
}

// Each error of the language, on its line.
func TestProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		line      int
		field     string
		msg       string
	}{
		{"not a feature", "Rule: x\n", 1, "source", "expected Feature: contract_name"},
		{"empty source", "# nothing\n", 2, "source", "expected Feature: contract_name"},
		{"empty feature", "Feature:\n" + rule("a"), 1, "source", "Feature name cannot be empty"},
		{"bad name", "Feature: my-shop\n" + rule("a"), 1, "contract_name", "Must contain only alphanumeric characters and underscores"},
		{"bad version", head + "Version: one\n" + rule("a"), 2, "source", "Version must be a positive integer"},
		{"zero version", head + "Version: 0\n" + rule("a"), 2, "source", "Version must be a positive integer"},
		{"huge version", head + "Version: 99999999999999999999\n" + rule("a"), 2, "source", "Version must be at most 2147483647"},
		{"empty description", head + "Description:\n" + rule("a"), 2, "source", "Description cannot be empty"},
		{"metadata twice", head + "Version: 1\nVersion: 2\n" + rule("a"), 3, "source", "metadata must appear once, before Background or Rule"},
		{"late metadata", head + rule("a") + "Version: 2\n", 5, "source", "metadata must appear once, before Background or Rule"},
		{"late include", head + rule("a") + "Include: base:1\n", 5, "source", "Include must appear before Background or Rule"},
		{"bad include", head + "Include: base\n" + rule("a"), 2, "source", "Include must use contract_name:positive_version"},
		{"include overflow", head + "Include: base:99999999999999999999\n" + rule("a"), 2, "source", "Include version must be a positive integer"},
		{"include twice", head + "Include: base:1\nInclude: base:2\n" + rule("a"), 3, "source", "contract may be included only once: base"},
		{"background late", head + rule("a") + "Background:\n", 5, "source", "Background must appear once, before Step, Group, or Rule blocks"},
		{"background keyword", head + "Background:\n  And threads lock to this version\n" + rule("a"), 3, "source", "Background requires Given followed by And clauses"},
		{"background clause", head + "Background:\n  Given the moon is full\n" + rule("a"), 3, "source", "unsupported Background clause: the moon is full"},
		{"background dup", head + "Background:\n  Given threads lock to this version\n  And threads lock to this version\n" + rule("a"), 4, "source", "duplicate version lock rule"},
		{"duration dup", head + "Background:\n  Given the thread must finish within \"1h\"\n  And the thread must finish within \"2h\"\n" + rule("a"), 4, "source", "duplicate thread duration rule"},
		{"terminals dup", head + "Background:\n  Given multiple terminal steps are allowed\n  And multiple terminal steps are allowed\n" + rule("a"), 4, "source", "duplicate multiple-terminal rule"},
		{"severity dup", head + "Background:\n  Given multiple terminal severity is \"minor\"\n  And multiple terminal severity is \"major\"\n" + rule("a"), 4, "source", "duplicate terminal severity rule"},
		{"severity", head + "Background:\n  Given multiple terminal severity is \"fatal\"\n" + rule("a"), 3, "validation.multiple_terminals_severity", "Must be one of: minor, warning, major, error"},
		{"thread duration", head + "Background:\n  Given the thread must finish within \"1 hour\"\n" + rule("a"), 3, "validation.max_duration", errDurationFormat},
		{"statement before block", head + "Then owner must be \"x\"\n" + rule("a"), 2, "source", "expected Background: or Rule:"},
		{"no rule", head, 2, "source", "at least one Rule or Include is required"},
		{"step unquoted", head + "Step: s\n  Description: \"x\"\n" + rule("s"), 2, "source", "Step requires a quoted name"},
		{"step dup", head + "Step: \"s\"\n  Description: \"x\"\nStep: \"s\"\n  Description: \"y\"\n" + rule("s"), 4, "source", `duplicate Step definition "s"`},
		{"step no description", head + "Step: \"s\"\n  Required context: \"a\"\n" + rule("s"), 4, "source", `Step requires: Description: "business meaning"`},
		{"step description dup", head + "Step: \"s\"\n  Description: \"x\"\n  Description: \"y\"\n" + rule("s"), 4, "source", "duplicate Step description"},
		{"step context dup", head + "Step: \"s\"\n  Description: \"x\"\n  Required context: \"a\"\n  Optional context: \"a\"\n" + rule("s"), 5, "source", `duplicate or conflicting Step context field "a"`},
		{"step clause", head + "Step: \"s\"\n  Description: \"x\"\n  Owner: \"y\"\n" + rule("s"), 4, "source", `unsupported Step clause: Owner: "y"`},
		{"step without rule", head + "Step: \"s\"\n  Description: \"x\"\n" + rule("t"), 2, "source", `Step definition "s" has no matching Rule`},
		{"description twice", head + "Step: \"s\"\n  Description: \"x\"\n" + rule("s", `step description is "y"`), 2, "source", `Step description is declared in both Step and Rule for "s"`},
		{"required and optional", head + "Step: \"s\"\n  Description: \"x\"\n  Required context: \"a\"\n" + rule("s", `content "a" is optional`), 4, "source", `context field "a" is both required and optional`},
		{"rule title", head + "Rule:\n  When step \"a\" is submitted\n  Then owner must be \"x\"\n", 2, "source", "Rule title cannot be empty"},
		{"rule when", head + "Rule: a\n  Then owner must be \"x\"\n", 3, "source", `Rule requires: When step "name" is submitted`},
		{"rule when at end", head + "Rule: a\n", 3, "source", `Rule requires: When step "name" is submitted`},
		{"rule dup", head + rule("a") + rule("a"), 6, "source", `duplicate step "a"; put its constraints in one Rule`},
		{"then", head + "Rule: a\n  When step \"a\" is submitted\n  And owner must be \"x\"\n", 4, "source", "step constraints require Then followed by And clauses"},
		{"scenario", head + rule("a") + "Scenario: buy\n", 5, "source", "step constraints require Then followed by And clauses"},
		{"tag", head + rule("a") + "@smoke\n", 5, "source", "step constraints require Then followed by And clauses"},
		{"table", head + rule("a") + "| a | b |\n", 5, "source", "step constraints require Then followed by And clauses"},
		{"but", head + rule("a") + "But this step is terminal\n", 5, "source", "step constraints require Then followed by And clauses"},
		{"no owner", head + "Rule: a\n  When step \"a\" is submitted\n  Then this step is terminal\n", 5, "source", `each step requires: Then owner must be "party"`},
		{"inline comment", head + rule("a", "this step is terminal # done"), 5, "source", "unsupported step constraint: this step is terminal # done"},
		{"owner dup", head + rule("a", `owner must be "y"`), 5, "source", "duplicate owner rule"},
		{"description dup", head + rule("a", `step description is "x"`, `step description is "y"`), 6, "source", "duplicate step description"},
		{"type dup", head + rule("a", `step type is "managed"`, `step type is "external"`), 6, "source", "duplicate step type"},
		{"type", head + rule("a", `step type is "robot"`), 5, "steps.a.type", "Invalid type 'robot'. Must be: managed, human_in_loop, or external"},
		{"prerequisite dup", head + rule("a") + rule("b", `step "a" must have succeeded`, `step "a" must succeed before each invocation`), 9, "source", "duplicate prerequisite"},
		{"entry dup", head + rule("a", "this step is an entry point", "this step is an entry point"), 6, "source", "duplicate entry point rule"},
		{"terminal dup", head + rule("a", "this step is terminal", "this step is terminal"), 6, "source", "duplicate terminal rule"},
		{"next dup", head + rule("a", `next step must be one of "a"`, `next step must be one of "a"`), 6, "source", "duplicate next-step rule"},
		{"timeout dup", head + rule("a", `this step must finish within "1s"`, `this step must finish within "2s"`), 6, "source", "duplicate step timeout rule"},
		{"timeout", head + rule("a", `this step must finish within "soon"`), 5, "steps.a.timeout", errDurationFormat},
		{"zero timeout", head + rule("a", `this step must finish within "0s"`), 5, "steps.a.timeout", `duration "0s" must be greater than zero`},
		{"next timeout dup", head + rule("a", `next step must be one of "b"`, `the next step must start within "1s"`, `the next step must start within "2s"`) + rule("b"), 7, "source", "duplicate transition timeout rule"},
		{"next timeout", head + rule("a", "this step is an entry point", `next step must be one of "b"`, `the next step must start within "x"`) + rule("b", "this step is terminal"), 7, "transitions[0].timeout", errDurationFormat},
		{"retry dup", head + rule("a", `next step must be one of "b"`, "this step may be retried at most 1 times", "this step may be retried at most 2 times") + rule("b"), 7, "source", "duplicate retry rule"},
		{"retry zero", head + rule("a", "this step may be retried at most 0 times"), 5, "source", "retry limit must be a positive integer; zero means unlimited in existing contracts"},
		{"retry without next", head + rule("a", "this step may be retried at most 2 times"), 5, "source", `transition timeout/retry rules require a next-step rule for "a"`},
		{"presence conflict", head + rule("a", `content "x" must be present`, `content "x" is optional`), 6, "source", "duplicate or conflicting content rule"},
		{"content dup", head + rule("a", `content "x" must be a number`, `content "x" must be a number`), 6, "source", "duplicate content constraint"},
		{"second regex", head + rule("a", `content "x" must match regex "a"`, `content "x" must match regex "b"`), 6, "source", "duplicate content constraint"},
		{"bound", head + rule("a", `content "amount" must be a number greater than +1`), 5, "source", "amount bound: expected a JSON-style number"},
		{"bound exponent", head + rule("a", `content "amount" must be a number less than 1e999`), 5, "source", "amount bound: numeric exponent must be between -308 and 308"},
		{"regex", head + rule("a", `content "ref" must match regex "(?<=a)b"`), 5, "source", "ref regex: invalid pattern: error parsing regexp: invalid named capture: `(?<=a)b`"},
		{"regex unquoted", head + rule("a", `content "ref" must match regex ^a$`), 5, "source", "unsupported step constraint: content \"ref\" must match regex ^a$"},
		{"regex too long", head + rule("a", `content "ref" must match regex "`+strings.Repeat("a", 4097)+`"`), 5, "source", "ref regex: pattern must contain 1 to 4096 bytes"},
		{"bad escape", head + rule("a", `content "x" must equal "\d"`), 5, "source", "invalid quoted value: invalid syntax"},
		{"blank quoted", head + rule("a", `content " " must be present`), 5, "source", "quoted values must be nonempty single-line strings"},
		{"newline quoted", head + rule("a", `content "a\nb" must be present`), 5, "source", "quoted values must be nonempty single-line strings"},
		{"list", head + rule("a", `content "c" must be one of GBP`), 5, "source", "expected a comma-separated list of quoted step names"},
		{"list comma", head + rule("a", `content "c" must be one of "GBP" "EUR"`), 5, "source", "expected comma between quoted names"},
		{"list dup", head + rule("a", `content "c" must be one of "GBP", "GBP"`), 5, "source", "duplicate name in list: GBP"},
		{"list trailing", head + rule("a", `content "c" must be one of "GBP",`), 5, "source", "expected a comma-separated list of quoted step names"},
		{"question dup", head + rule("a", `content "r" must satisfy question "Is it fine?"`, `content "r" must satisfy question "Is it good?"`), 6, "source", "duplicate semantic question for r"},
		{"semantic context first", head + rule("a", `semantic context for content "r" is "a"`), 5, "source", "semantic context requires a question for r"},
		{"semantic confidence first", head + rule("a", `semantic confidence for content "r" is 0.9`), 5, "source", "semantic confidence requires a question for r"},
		{"semantic context dup", head + rule("b") + rule("a", `content "r" must satisfy question "Is it fine?"`, `semantic context for content "r" is "b"`, `semantic context for content "r" is "b"`), 10, "source", "duplicate semantic context for r"},
		{"semantic confidence dup", head + rule("a", `content "r" must satisfy question "Is it fine?"`, `semantic confidence for content "r" is 0.9`, `semantic confidence for content "r" is 0.8`), 7, "source", "duplicate semantic confidence for r"},
		{"semantic confidence number", head + rule("a", `content "r" must satisfy question "Is it fine?"`, `semantic confidence for content "r" is high`), 6, "source", "semantic confidence must be a number"},
		{"semantic confidence range", head + rule("a", `content "r" must satisfy question "Is it fine?"`, `semantic confidence for content "r" is 0.3`), 6, "steps.a.semantic_rules", "semantic rule min_probability must be between 0.5 and 1"},
		{"semantic question short", head + rule("a", `content "r" must satisfy question "Ok?"`), 5, "steps.a.semantic_rules", "semantic rule question must be 5–1000 characters"},
		{"semantic field", head + rule("a", `content "r.x" must satisfy question "Is it fine?"`), 5, "steps.a.semantic_rules", "semantic rule field must be a simple identifier"},
		{"semantic context step", head + rule("a", `content "r" must satisfy question "Is it fine?"`, `semantic context for content "r" is "nope"`), 6, "steps.a.semantic_rules", "Context step must name a different step defined in this contract: nope"},
		{"semantic optional", head + rule("a", `content "r" is optional`, `content "r" must satisfy question "Is it fine?"`), 6, "steps.a.semantic_rules", `Semantic rule requires field "r", which is declared optional`},
		{"reference self", head + rule("a", `content "x" must equal a.x`), 5, "steps.a.content_rules", "Reference must name a different step defined in this contract: a"},
		{"reference undeclared", head + rule("b", `content "y" must be present`) + rule("a", `content "x" must equal b.x`), 9, "steps.a.content_rules", `Referenced field "x" is not declared by step "b"`},
		{"content optional", head + rule("a", `content "x" is optional`, `content "x" must not be empty`), 6, "steps.a.content_rules", `Content rule requires field "x", which is declared optional`},
		{"group unquoted", head + rule("a") + rule("b") + "Group: g\n  Given parallel steps are \"a\", \"b\"\n", 8, "source", "Group requires a quoted name"},
		{"group dup", head + rule("a") + rule("b") + "Group: \"g\"\n  Given parallel steps are \"a\", \"b\"\nGroup: \"g\"\n  Given parallel steps are \"a\", \"b\"\n", 10, "source", `duplicate group "g"`},
		{"group keyword", head + rule("a") + rule("b") + "Group: \"g\"\n  And parallel steps are \"a\", \"b\"\n", 9, "source", "Group requires Given followed by And clauses"},
		{"group clause", head + rule("a") + rule("b") + "Group: \"g\"\n  Given parallel steps are \"a\", \"b\"\n  And the fastest wins\n", 10, "source", "unsupported Group clause: the fastest wins"},
		{"group steps dup", head + rule("a") + rule("b") + "Group: \"g\"\n  Given parallel steps are \"a\", \"b\"\n  And parallel steps are \"a\", \"b\"\n", 10, "source", "duplicate parallel steps clause"},
		{"group success dup", head + rule("a") + rule("b") + "Group: \"g\"\n  Given parallel steps are \"a\", \"b\"\n  And all parallel steps must succeed\n  And all parallel steps must succeed\n", 11, "source", "duplicate group success rule"},
		{"group duration dup", head + rule("a") + rule("b") + "Group: \"g\"\n  Given parallel steps are \"a\", \"b\"\n  And combined duration must be within \"1s\"\n  And combined duration must be within \"2s\"\n", 11, "source", "duplicate group duration rule"},
		{"group duration", head + rule("a") + rule("b") + "Group: \"g\"\n  Given parallel steps are \"a\", \"b\"\n  And combined duration must be within \"1 s\"\n", 10, "groups.g.rules.max_combined_duration", "Invalid duration format"},
		{"group unknown step", head + rule("a") + rule("b") + "Group: \"g\"\n  Given parallel steps are \"a\", \"z\"\n", 8, "groups.g.steps", "Referenced step 'z' does not exist"},
		{"group named like a step", head + rule("a") + rule("b") + "Group: \"a\"\n  Given parallel steps are \"a\", \"b\"\n", 8, "groups", "Group ID must be nonempty and distinct from every step and group ID"},
		{"group one step", head + rule("a") + "Group: \"g\"\n  Given parallel steps are \"a\"\n", 7, "source", "Group requires at least two parallel steps"},
		{"unknown next", head + rule("a", "this step is an entry point", `next step must be one of "z"`, "this step is terminal"), 6, "transitions[0].to", "Step 'z' is not defined in steps"},
		{"no incoming", head + rule("a", "this step is an entry point", `next step must be one of "b"`) + rule("b", "this step is terminal") + rule("c", "this step is terminal"), 14, "terminal_steps.c", "Terminal step 'c' is not reachable from any transition"},
		{"no outgoing", head + rule("a", "this step is an entry point", `next step must be one of "b"`) + rule("b"), 8, "steps.b", "Step 'b' has no outgoing transitions and is not a terminal step"},
		{"terminal unreachable", head + rule("a", "this step is an entry point", `next step must be one of "a"`, "this step is terminal") + rule("b", "this step is terminal", `next step must be one of "a"`), 11, "terminal_steps.b", "Terminal step 'b' is not reachable from any transition"},
		{"self dependency", head + rule("a", `step "a" must have succeeded`), 5, "steps.a.depends_on", "Step 'a' cannot depend on itself"},
		{"unknown dependency", head + rule("a", `step "z" must have succeeded`), 5, "steps.a.depends_on", "Dependency 'z' is not defined in steps"},
		{"reference unknown", head + rule("a", `content "x" must equal z.x`), 5, "steps.a.content_rules", "Reference must name a different step defined in this contract: z"},
		{"description long", head + rule("a", `step description is "`+strings.Repeat("x", 501)+`"`), 5, "steps.a.description", "Step description must contain text and be at most 500 bytes"},
		{"meaning long", head + "Step: \"a\"\n  Description: \"x\"\n  Required context: \"f\" means \"" + strings.Repeat("m", 501) + "\"\n" + rule("a"), 4, "steps.a.business_context.descriptions", `Description for context field "f" must refer to a declared field and contain 1–500 bytes of text`},
		{"not utf-8", head + rule("a", "content \"\xff\" must be present"), 0, "source", "contract source must be UTF-8 text without NUL characters"},
		{"include without engine", head + "Include: base:1\n" + rule("a"), 2, "includes", "Includes must be resolved against published contract versions; preview or upload this contract on the engine"},
	}
	for _, tt := range tests {
		res := compile(t, tt.src)
		if len(res.Problems) == 0 {
			t.Errorf("%s: accepted", tt.name)
			continue
		}
		p := res.Problems[0]
		if p.Line != tt.line || p.Field != tt.field || p.Message != tt.msg {
			t.Errorf("%s: first problem %+v\nwant          {Line:%d Field:%s Message:%s}\nall: %v", tt.name, p, tt.line, tt.field, tt.msg, res.Problems)
		}
	}
}

// A preview lists every problem, each on its line, in line order for the
// parse and then in check order; a bad line does not hide the next ones.
func TestEveryProblemIsListed(t *testing.T) {
	t.Parallel()
	src := head + `Version: x
Rule: Approve
  When step "approval" is submitted
  Then owner must be "reviewer"
  And the payment should be sensible
  And content "amount" must be a number greater than zero
Scenario: charge
Rule: Charge
  When step "charge" is submitted
  Then owner must be "processor"
  And step "nowhere" must have succeeded
  And content "note" is optional
  And content "note" must not be empty
  And this step must finish within "3 days"
`
	res := compile(t, src)
	var got []string
	for _, p := range res.Problems {
		got = append(got, p.ReferenceText())
	}
	want := []string{
		"source: Failed to parse Gherkin contract: line 2: Version must be a positive integer",
		"source: Failed to parse Gherkin contract: line 6: unsupported step constraint: the payment should be sensible",
		"source: Failed to parse Gherkin contract: line 7: amount bound: expected a JSON-style number",
		"source: Failed to parse Gherkin contract: line 8: step constraints require Then followed by And clauses",
		"steps.charge.timeout: " + errDurationFormat,
		"steps.charge.depends_on: Dependency 'nowhere' is not defined in steps",
		`steps.charge.content_rules: Content rule requires field "note", which is declared optional`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	lines := []int{2, 6, 7, 8, 15, 12, 14}
	for i, p := range res.Problems {
		if i < len(lines) && p.Line != lines[i] {
			t.Errorf("problem %d on line %d, want %d", i, p.Line, lines[i])
		}
	}
}

func TestParseDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30s", 30 * time.Second, true}, {"100ms", 100 * time.Millisecond, true}, {"50us", 50 * time.Microsecond, true},
		{"5m", 5 * time.Minute, true}, {"2h", 2 * time.Hour, true}, {"3d", 72 * time.Hour, true}, {"1.5d", 36 * time.Hour, true},
		{"0.5s", 500 * time.Millisecond, true}, {"1.0005us", 1000 * time.Nanosecond, true}, {"3650d", 3650 * 24 * time.Hour, true},
		{"3651d", 0, false}, {"0s", 0, false}, {"0.0001us", 0, false}, {"1 s", 0, false}, {"1h30m", 0, false}, {"-1s", 0, false},
		{".5s", 0, false}, {"1ns", 0, false}, {"1w", 0, false}, {"", 0, false}, {"99999999999999999999999999999999999d", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// The content hash ignores comments, layout, clause order of prerequisites,
// the Feature name, Version and Description; it changes with any rule.
func TestContentHashIgnoresFormatting(t *testing.T) {
	t.Parallel()
	a := mustCompile(t, head+"Version: 1\n"+rule("x")+rule("y", `step "x" must have succeeded`, `content "n" must be a number`))
	b := mustCompile(t, "# another layout\nFeature: other\nVersion: 7\nDescription: Renamed.\n\nRule: x\n\tWhen step \"x\" is submitted\n\tThen owner must be \"svc\"\n\n"+
		"Rule: y\n When step \"y\" is submitted\n Then content \"n\" must be a number\n And step \"x\" must have succeeded\n And owner must be \"svc\"\n")
	c := mustCompile(t, head+rule("x")+rule("y", `step "x" must have succeeded`, `content "n" must be a boolean`))
	if a.ContentHash() != b.ContentHash() {
		t.Errorf("formatting changed the hash:\n%+v\n%+v", a, b)
	}
	if a.ContentHash() == c.ContentHash() {
		t.Error("a different rule kept the hash")
	}
}

// Format writes a source that compiles back to the same contract.
func TestFormatRoundTrips(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("testdata/threadify-gherkin/valid_*.feature")
	for _, f := range files {
		src, _ := os.ReadFile(f)
		c := mustCompile(t, string(src))
		again := mustCompile(t, Format(c))
		if !reflect.DeepEqual(c, again) {
			t.Errorf("%s: round trip differs\n%+v\n%+v\n%s", f, c, again, Format(c))
		}
	}
}
