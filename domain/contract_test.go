package domain

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

const validContractYAML = `
contract_name: order_flow
version: 2
description: Orders from checkout to delivery
entry_points: [validate]
parties: [checkout, warehouse]
steps:
  - id: validate
    owner: checkout
    timeout: 30s
    description: check the basket
    business_context:
      required: [items]
      optional: [coupon]
  - id: pay
    owner: checkout
    type: external
    timeout: 5m
    business_context:
      required: [amount]
  - name: ship
    owner: warehouse
    type: human_in_loop
  - id: cancelled
    owner: checkout
transitions:
  - from: validate
    to: pay
  - from: pay
    to: [ship, cancelled]
    max_retries: 3
  - from: ship
    to: cancelled
    can_retry: false
terminal_steps: [ship, cancelled]
validation:
  max_duration: 2d
  allow_multiple_terminals: false
  multiple_terminals_severity: warning
`

func TestParseContractValid(t *testing.T) {
	t.Parallel()
	c, err := ParseContract([]byte(validContractYAML))
	if err != nil {
		t.Fatalf("ParseContract: %v (problems %v)", err, ContractProblems(err))
	}
	want := Contract{
		Name: "order_flow", Version: 2, Description: "Orders from checkout to delivery",
		EntryPoints: []string{"validate"}, Parties: []string{"checkout", "warehouse"},
		Steps: []ContractStep{
			{Name: "validate", Owner: "checkout", Type: "managed", Timeout: 30 * time.Second, Required: []string{"items"}, Optional: []string{"coupon"}, Description: "check the basket"},
			{Name: "pay", Owner: "checkout", Type: "external", Timeout: 5 * time.Minute, Required: []string{"amount"}},
			{Name: "ship", Owner: "warehouse", Type: "human_in_loop"},
			{Name: "cancelled", Owner: "checkout", Type: "managed"},
		},
		Transitions: []Transition{
			{From: "validate", To: []string{"pay"}, CanRetry: true},
			{From: "pay", To: []string{"ship", "cancelled"}, MaxRetries: 3, CanRetry: true},
			{From: "ship", To: []string{"cancelled"}, CanRetry: false},
		},
		TerminalSteps:             []string{"ship", "cancelled"},
		MaxDuration:               48 * time.Hour,
		MultipleTerminalsSeverity: SeverityWarning,
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("parsed contract\n got %+v\nwant %+v", c, want)
	}
}

func TestParseContractDefaults(t *testing.T) {
	t.Parallel()
	c, err := ParseContract([]byte(`
contract_name: mini
version: 1
entry_points: [a]
max_duration: 1h
steps:
  - id: a
    owner: svc
  - id: b
`))
	if err != nil {
		t.Fatalf("ParseContract: %v %v", err, ContractProblems(err))
	}
	if !reflect.DeepEqual(c.Parties, []string{"svc"}) {
		t.Errorf("parties derived from owners = %v, want [svc]", c.Parties)
	}
	if c.MultipleTerminalsSeverity != SeverityMinor {
		t.Errorf("default multiple terminals severity = %q, want minor", c.MultipleTerminalsSeverity)
	}
	if c.MaxDuration != time.Hour {
		t.Errorf("top-level max_duration = %v, want 1h", c.MaxDuration)
	}
	if c.Steps[1].Type != StepTypeManaged || c.Steps[1].Owner != "" {
		t.Errorf("step defaults = %+v", c.Steps[1])
	}
	if c.Transitions == nil || c.TerminalSteps == nil {
		t.Error("empty lists must be non-nil so the stored JSON says [] not null")
	}
}

// TestParseContractProblems checks each rule on its own and that the problem
// carries the field path an author needs.
func TestParseContractProblems(t *testing.T) {
	t.Parallel()
	base := func(extra string) string {
		return "contract_name: c\nversion: 1\nentry_points: [a]\nsteps:\n  - id: a\n  - id: b\n" + extra
	}
	tests := []struct {
		name, src, field, msg string
	}{
		{"not yaml", "contract_name: [", "", "not valid YAML"},
		{"empty", "", "", "contract is empty"},
		{"not a mapping", "- a\n- b", "", "must be a YAML mapping"},
		{"name missing", "version: 1\nentry_points: [a]\nsteps: [{id: a}]", "contract_name", "contract_name is required"},
		{"name invalid chars", strings.Replace(base(""), "contract_name: c", "contract_name: 'bad name!'", 1), "contract_name", "must start with a letter or digit"},
		{"name too long", strings.Replace(base(""), "contract_name: c", "contract_name: "+strings.Repeat("x", 129), 1), "contract_name", "at most 128"},
		{"version missing", "contract_name: c\nentry_points: [a]\nsteps: [{id: a}]", "version", "version is required"},
		{"version zero", strings.Replace(base(""), "version: 1", "version: 0", 1), "version", "at least 1"},
		{"version negative", strings.Replace(base(""), "version: 1", "version: -3", 1), "version", "at least 1"},
		{"version not int", strings.Replace(base(""), "version: 1", "version: one", 1), "version", "must be an integer"},
		{"version float", strings.Replace(base(""), "version: 1", "version: 1.5", 1), "version", "must be an integer"},
		{"unknown top key", base("colour: red\n"), "colour", `unknown key "colour"`},
		{"unknown step key", strings.Replace(base(""), "  - id: b\n", "  - id: b\n    ownr: x\n", 1), "steps[1].ownr", "unknown key"},
		{"unknown transition key", base("transitions: [{from: a, to: b, when: x}]\n"), "transitions[0].when", "unknown key"},
		{"unknown validation key", base("validation: {strict: true}\n"), "validation.strict", "unknown key"},
		{"unknown context key", strings.Replace(base(""), "  - id: b\n", "  - id: b\n    business_context: {must: [x]}\n", 1), "steps[1].business_context.must", "unknown key"},
		{"duplicate key", base("description: x\ndescription: y\n"), "description", "appears twice"},
		{"no entry points", "contract_name: c\nversion: 1\nsteps: [{id: a}]", "entry_points", "at least one entry point"},
		{"entry point unknown", strings.Replace(base(""), "entry_points: [a]", "entry_points: [a, z]", 1), "entry_points[1]", `entry point "z" is not a step`},
		{"entry point twice", strings.Replace(base(""), "entry_points: [a]", "entry_points: [a, a]", 1), "entry_points[1]", "listed twice"},
		{"no steps", "contract_name: c\nversion: 1\nentry_points: [a]", "steps", "at least one step"},
		{"steps empty", "contract_name: c\nversion: 1\nentry_points: [a]\nsteps: []", "steps", "at least one step"},
		{"steps not list", "contract_name: c\nversion: 1\nentry_points: [a]\nsteps: {a: 1}", "steps", "must be a list"},
		{"step not mapping", strings.Replace(base(""), "  - id: b\n", "  - b\n", 1), "steps[1]", "must be a mapping"},
		{"step id missing", strings.Replace(base(""), "  - id: b\n", "  - owner: x\n", 1), "steps[1].id", "step id is required"},
		{"step id with newline", strings.Replace(base(""), "  - id: b\n", "  - id: \"b\\nc\"\n", 1), "steps[1].id", "without control characters"},
		{"step id and name differ", strings.Replace(base(""), "  - id: b\n", "  - {id: b, name: c}\n", 1), "steps[1].name", "use one"},
		{"duplicate step", strings.Replace(base(""), "  - id: b\n", "  - id: a\n", 1), "steps[1].id", `step "a" is defined twice`},
		{"owner not in parties", strings.Replace(base("parties: [p]\n"), "  - id: b\n", "  - {id: b, owner: q}\n", 1), "steps[1].owner", `owner "q" of step "b" is not one of the contract's parties`},
		{"empty party", base("parties: ['']\n"), "parties[0]", "must not be empty"},
		{"duplicate party", base("parties: [p, p]\n"), "parties[1]", "listed twice"},
		{"bad step type", strings.Replace(base(""), "  - id: b\n", "  - {id: b, type: robot}\n", 1), "steps[1].type", "unknown step type"},
		{"bad timeout", strings.Replace(base(""), "  - id: b\n", "  - {id: b, timeout: soon}\n", 1), "steps[1].timeout", `invalid duration "soon"`},
		{"negative timeout", strings.Replace(base(""), "  - id: b\n", "  - {id: b, timeout: -5s}\n", 1), "steps[1].timeout", "must be positive"},
		{"zero days", base("max_duration: 0d\n"), "max_duration", "days must be a whole number"},
		{"bad max duration", base("validation: {max_duration: forever}\n"), "validation.max_duration", "invalid duration"},
		{"max duration twice", base("max_duration: 1h\nvalidation: {max_duration: 2h}\n"), "validation.max_duration", "set it once"},
		{"bad severity", base("validation: {multiple_terminals_severity: fatal}\n"), "validation.multiple_terminals_severity", "unknown severity"},
		{"allow multiple not bool", base("validation: {allow_multiple_terminals: maybe}\n"), "validation.allow_multiple_terminals", "must be true or false"},
		{"required and optional", strings.Replace(base(""), "  - id: b\n", "  - {id: b, business_context: {required: [x], optional: [x]}}\n", 1), "steps[1].business_context", "both required and optional"},
		{"context not list", strings.Replace(base(""), "  - id: b\n", "  - {id: b, business_context: {required: {x: 1}}}\n", 1), "steps[1].business_context.required", "must be a list of strings"},
		{"transitions not list", base("transitions: {a: b}\n"), "transitions", "must be a list"},
		{"transition from unknown", base("transitions: [{from: z, to: b}]\n"), "transitions[0].from", `transition from "z"`},
		{"transition from missing", base("transitions: [{to: b}]\n"), "transitions[0].from", "from is required"},
		{"transition to unknown", base("transitions: [{from: a, to: [b, z]}]\n"), "transitions[0].to[1]", `transition to "z"`},
		{"transition to missing", base("transitions: [{from: a}]\n"), "transitions[0].to", "to is required"},
		{"transition to empty list", base("transitions: [{from: a, to: []}]\n"), "transitions[0].to", "to is required"},
		{"transition to twice", base("transitions: [{from: a, to: [b, b]}]\n"), "transitions[0].to[1]", "listed twice"},
		{"transition from twice", base("transitions: [{from: a, to: b}, {from: a, to: a}]\n"), "transitions[1].from", "declared twice"},
		{"negative retries", base("transitions: [{from: a, to: b, max_retries: -1}]\n"), "transitions[0].max_retries", "must not be negative"},
		{"retries without can_retry", base("transitions: [{from: a, to: b, can_retry: false, max_retries: 2}]\n"), "transitions[0].max_retries", "can_retry is false"},
		{"can_retry not bool", base("transitions: [{from: a, to: b, can_retry: sometimes}]\n"), "transitions[0].can_retry", "must be true or false"},
		{"retry_leads_to unknown", base("transitions: [{from: a, to: b, retry_leads_to: z}]\n"), "transitions[0].retry_leads_to", "not a step"},
		{"terminal unknown", base("terminal_steps: [z]\n"), "terminal_steps[0]", `terminal step "z" is not a step`},
		{"terminal empty string", base("terminal_steps: ['']\n"), "terminal_steps[0]", "must not be empty"},
		{"too many steps", "contract_name: c\nversion: 1\nentry_points: [s0]\nsteps:\n" + manySteps(MaxContractSteps+1), "steps", "at most 512 steps"},
		{"version too big", strings.Replace(base(""), "version: 1", "version: 2147483648", 1), "version", "at most 2147483647"},
		{"version beyond int64", strings.Replace(base(""), "version: 1", "version: 99999999999999999999", 1), "version", "must be an integer"},
		{"NUL escape in description", base("description: \"a\\0b\"\n"), "description", "NUL"},
		{"NUL escape in list", strings.Replace(base(""), "entry_points: [a]", "entry_points: [\"a\\0\"]", 1), "entry_points[0]", "NUL"},
		{"raw NUL byte", base("description: a\x00b\n"), "", "UTF-8 text without NUL"},
		{"invalid UTF-8", base("description: \xff\xfe\n"), "", "UTF-8 text without NUL"},
		{"two documents", base("---\ncontract_name: d\n"), "", "single YAML document"},
		{"too large", "contract_name: c\n#" + strings.Repeat("x", MaxContractSourceBytes), "", "the limit is"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseContract([]byte(tt.src))
			if err == nil {
				t.Fatal("ParseContract accepted an invalid contract")
			}
			de := AsError(err)
			if de.Kind != KindInvalid || de.Code != CodeInvalidContract {
				t.Fatalf("error kind/code = %v/%v, want invalid/invalid_contract", de.Kind, de.Code)
			}
			for _, p := range ContractProblems(err) {
				if p.Field == tt.field && strings.Contains(p.Message, tt.msg) {
					return
				}
			}
			t.Fatalf("no problem {%q, ~%q} in %+v", tt.field, tt.msg, ContractProblems(err))
		})
	}
}

func manySteps(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString("  - id: s" + strconv.Itoa(i) + "\n")
	}
	return b.String()
}

func TestParseContractReportsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := ParseContract([]byte(`
contract_name: bad name
version: 0
parties: [p]
entry_points: [nope]
steps:
  - id: a
    owner: q
    timeout: later
  - id: a
transitions:
  - from: a
    to: ghost
terminal_steps: [ghost2]
extra: 1
`))
	got := map[string]bool{}
	for _, p := range ContractProblems(err) {
		got[p.Field] = true
	}
	for _, f := range []string{"contract_name", "version", "entry_points[0]", "steps[0].owner", "steps[0].timeout", "steps[1].id", "transitions[0].to[0]", "terminal_steps[0]", "extra"} {
		if !got[f] {
			t.Errorf("problem for %q missing; got %v", f, ContractProblems(err))
		}
	}
	if de := AsError(err); de.Field == "" || !strings.Contains(de.Message, "problems") {
		t.Errorf("error summary = %q (field %q), want a count of problems and the first field", de.Message, de.Field)
	}
}

func TestParseContractProblemCap(t *testing.T) {
	t.Parallel()
	// 300 steps, each with an unknown key and an unknown owner, reached
	// through an alias so the source stays small.
	var b strings.Builder
	b.WriteString("contract_name: c\nversion: 1\nentry_points: [s0]\nparties: [p]\nsteps:\n")
	for i := 0; i < 300; i++ {
		b.WriteString("  - {id: s" + strconv.Itoa(i) + ", owner: q, junk: 1}\n")
	}
	_, err := ParseContract([]byte(b.String()))
	ps := ContractProblems(err)
	if len(ps) != MaxContractProblems {
		t.Fatalf("got %d problems, want the cap %d", len(ps), MaxContractProblems)
	}
	if last := ps[len(ps)-1]; !strings.Contains(last.Message, "too many problems") {
		t.Errorf("last problem = %+v, want a note that the list was cut", last)
	}

	_, err = ParseContract([]byte("contract_name: c\nversion: 1\nentry_points: [a]\nsteps: [{id: a}]\nterminal_steps: [" + strings.Repeat("a, ", maxListItems) + "a]"))
	if !hasProblem(err, "terminal_steps", "at most 1024 items") {
		t.Errorf("long list accepted: %v", ContractProblems(err))
	}
	_, err = ParseContract([]byte("contract_name: c\nversion: 1\nentry_points: [a]\nsteps: [{id: a}]\nx: &t {from: a, to: a}\n"))
	if !hasProblem(err, "x", "unknown key") {
		t.Errorf("got %v", ContractProblems(err))
	}
	_, err = ParseContract([]byte("contract_name: c\nversion: 1\nentry_points: [a]\nsteps: [{id: a}]\ntransitions: [" + strings.Repeat("{from: a, to: a}, ", MaxContractSteps) + "{from: a, to: a}]"))
	if !hasProblem(err, "transitions", "at most 512 transitions") {
		t.Errorf("too many transitions accepted: %v", ContractProblems(err))
	}
}

func hasProblem(err error, field, msg string) bool {
	for _, p := range ContractProblems(err) {
		if p.Field == field && strings.Contains(p.Message, msg) {
			return true
		}
	}
	return false
}

func TestParseContractDocumentMarkers(t *testing.T) {
	t.Parallel()
	body := "contract_name: c\nversion: 1\nentry_points: [a]\nsteps: [{id: a}]\n"
	for _, src := range []string{"---\n" + body, body + "---\n", body + "...\n", "# comment\n---\n" + body + "---\n# end\n"} {
		if _, err := ParseContract([]byte(src)); err != nil {
			t.Errorf("%q: %v %v", src, err, ContractProblems(err))
		}
	}
}

func TestParseContractTerminalWithOutgoingTransitionsIsFine(t *testing.T) {
	t.Parallel()
	_, err := ParseContract([]byte(`
contract_name: loop
version: 1
entry_points: [a]
steps: [{id: a}, {id: b}]
transitions: [{from: a, to: b}, {from: b, to: a}]
terminal_steps: [b]
`))
	if err != nil {
		t.Fatalf("terminal step with outgoing transition rejected: %v %v", err, ContractProblems(err))
	}
}

func TestParseContractAliasesAndAnchors(t *testing.T) {
	t.Parallel()
	c, err := ParseContract([]byte(`
contract_name: anchors
version: 1
entry_points: &eps [a]
steps:
  - &stepa {id: a, owner: p}
  - {id: b, owner: p}
terminal_steps: *eps
`))
	if err != nil {
		t.Fatalf("ParseContract: %v %v", err, ContractProblems(err))
	}
	if !c.IsTerminal("a") || !c.IsEntryPoint("a") {
		t.Fatalf("aliases not followed: %+v", c)
	}
}

func TestContractLookups(t *testing.T) {
	t.Parallel()
	c, err := ParseContract([]byte(validContractYAML))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name                   string
		known, entry, terminal bool
		next                   []string
		transition, canRetry   bool
		maxRetries             int
	}{
		{"validate", true, true, false, []string{"pay"}, true, true, 0},
		{"pay", true, false, false, []string{"ship", "cancelled"}, true, true, 3},
		{"ship", true, false, true, []string{"cancelled"}, true, false, 0},
		{"cancelled", true, false, true, nil, false, false, 0},
		{"ghost", false, false, false, nil, false, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ok := c.Step(tt.name)
			if ok != tt.known || (ok && s.Name != tt.name) {
				t.Errorf("Step(%q) = %+v, %v", tt.name, s, ok)
			}
			if got := c.IsEntryPoint(tt.name); got != tt.entry {
				t.Errorf("IsEntryPoint = %v", got)
			}
			if got := c.IsTerminal(tt.name); got != tt.terminal {
				t.Errorf("IsTerminal = %v", got)
			}
			if got := c.AllowedNext(tt.name); !reflect.DeepEqual(got, tt.next) {
				t.Errorf("AllowedNext = %v, want %v", got, tt.next)
			}
			tr, ok := c.Transition(tt.name)
			if ok != tt.transition || tr.CanRetry != tt.canRetry || tr.MaxRetries != tt.maxRetries {
				t.Errorf("Transition = %+v, %v", tr, ok)
			}
		})
	}
	if c.Ref() != "order_flow:2" {
		t.Errorf("Ref = %q", c.Ref())
	}
}

func TestParseContractRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		name    string
		version int
		ok      bool
	}{
		{"order_flow", "order_flow", 0, true},
		{"order_flow:3", "order_flow", 3, true},
		{" order.flow-2 ", "order.flow-2", 0, true},
		{"order_flow:0", "", 0, false},
		{"order_flow:x", "", 0, false},
		{"", "", 0, false},
		{"bad name", "", 0, false},
	}
	for _, tt := range tests {
		name, v, err := ParseContractRef(tt.in)
		if (err == nil) != tt.ok || name != tt.name || v != tt.version {
			t.Errorf("ParseContractRef(%q) = %q, %d, %v", tt.in, name, v, err)
		}
	}
}

func TestParseContractDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30s", 30 * time.Second, true},
		{"5m", 5 * time.Minute, true},
		{"1h30m", 90 * time.Minute, true},
		{"2d", 48 * time.Hour, true},
		{" 10s ", 10 * time.Second, true},
		{"0s", 0, false},
		{"-1m", 0, false},
		{"1.5d", 0, false},
		{"d", 0, false},
		{"99999d", 0, false},
		{"10", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseContractDuration(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseContractDuration(%q) = %v, %v", tt.in, got, err)
		}
	}
}

func FuzzParseContract(f *testing.F) {
	f.Add([]byte(validContractYAML))
	f.Add([]byte(""))
	f.Add([]byte("contract_name: c\nversion: 1\nentry_points: [a]\nsteps: [{id: a}]"))
	f.Add([]byte("a: &a [*a]"))
	f.Add([]byte("contract_name: c\nversion: 1\nentry_points: [a]\nsteps: [{id: a}]\n---\nx: 1\n"))
	f.Add([]byte("description: \"\\0\"\nversion: 2147483648"))
	f.Add([]byte("x: &st {id: a, junk: 1, to: &l [a, a]}\nsteps: [*st, *st, *st]\ntransitions: [*st, {from: a, to: *l}]\nentry_points: *l"))
	f.Add([]byte("contract_name: c\nversion: 1\nentry_points: [a]\nsteps: [{id: a, timeout: 1d, business_context: {required: [x], optional: y}}]\nterminal_steps: a"))
	f.Add([]byte("steps: [[], {}, 1, null, {id: null}]\ntransitions: [{from: [x], to: {y: 1}}]"))
	f.Add([]byte("version: 99999999999999999999999\nmax_duration: 9999999999h\nvalidation: {max_duration: 1d}"))
	f.Fuzz(func(t *testing.T, src []byte) {
		c, err := ParseContract(src)
		if err != nil {
			if len(ContractProblems(err)) == 0 {
				t.Fatalf("error without problems: %v", err)
			}
			return
		}
		// An accepted contract is internally consistent.
		if c.Name == "" || c.Version < 1 || len(c.Steps) == 0 || len(c.EntryPoints) == 0 {
			t.Fatalf("accepted incomplete contract %+v", c)
		}
		for _, e := range c.EntryPoints {
			if _, ok := c.Step(e); !ok {
				t.Fatalf("entry point %q is not a step", e)
			}
		}
		for _, tr := range c.Transitions {
			for _, to := range append([]string{tr.From}, tr.To...) {
				if _, ok := c.Step(to); !ok {
					t.Fatalf("transition names unknown step %q", to)
				}
			}
		}
		// Validation of any step of an accepted contract never panics.
		t0 := time.Unix(0, 0)
		var snap ThreadSnapshot
		for i, st := range c.Steps {
			r := ValidateStep(c, snap, StepInput{Name: st.Name, Status: "success", Attempt: i%3 + 1,
				StartedAt: t0, FinishedAt: t0.Add(time.Hour)}, t0.Add(time.Duration(i)*time.Hour))
			if r.OverallStatus == "" {
				t.Fatal("empty overall status")
			}
			snap.Steps = append(snap.Steps, RecordedStep{Name: st.Name, Status: "success"})
		}
	})
}

func BenchmarkParseContract(b *testing.B) {
	src := []byte(validContractYAML)
	for i := 0; i < b.N; i++ {
		if _, err := ParseContract(src); err != nil {
			b.Fatal(err)
		}
	}
}
