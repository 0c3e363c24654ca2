package gherkin

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/threadengine/engine/domain"
)

// Include names a published contract version an Include line composes in.
type Include struct {
	Name    string `json:"name"`
	Version int    `json:"version"`
}

// Published is what a Resolver finds for an Include.
type Published struct {
	// Contract is the version's compiled content (its own includes already
	// expanded) when Found.
	Contract domain.Contract
	Found    bool
	// Exists: the contract has some version (tells "no such contract" from
	// "no such version").
	Exists bool
}

// Resolver looks up a published contract version. Its error is a lookup
// failure (storage down): Compile returns it rather than a problem.
type Resolver func(name string, version int) (Published, error)

// Result is a compiled source. Problems empty means Contract is valid.
type Result struct {
	Contract domain.Contract
	// Problems are in a fixed order: parse problems by line, problems
	// found at the end of the parse, include problems, then validation
	// problems in check order (steps in source order).
	Problems []domain.ContractProblem
	// Warnings never refuse the contract (see docs/integrators/contracts.md).
	Warnings []domain.ContractProblem
	Includes []Include
	// NameLine is the Feature line; StepLines the When line of each step
	// (the Include line of an included one), for callers that place their
	// own remarks.
	NameLine  int
	StepLines map[string]int
}

// Compile parses and validates a Gherkin contract source and compiles it
// into the engine's contract model. Include lines are resolved with resolve
// (nil: an Include is a problem). It never panics, whatever src holds; the
// error is resolve's only.
func Compile(src []byte, resolve Resolver) (Result, error) {
	var res Result
	if len(src) > domain.MaxContractSourceBytes {
		res.Problems = []domain.ContractProblem{{Field: "source", Message: fmt.Sprintf("contract source is %d bytes; the limit is %d", len(src), domain.MaxContractSourceBytes)}}
		return res, nil
	}
	if !utf8.Valid(src) || bytes.IndexByte(src, 0) >= 0 {
		res.Problems = []domain.ContractProblem{{Field: "source", Message: "contract source must be UTF-8 text without NUL characters"}}
		return res, nil
	}
	d := parse(string(src))
	for _, in := range d.includes {
		res.Includes = append(res.Includes, Include{Name: in.name, Version: in.version})
	}
	v := &validator{d: d, stepLine: map[string]int{}}
	c := v.build()
	if len(d.includes) > 0 {
		var err error
		if c, err = v.compose(c, resolve); err != nil {
			return Result{}, err
		}
	}
	v.validate(c)
	res.Problems = append(append(append(d.problems, v.src...), v.inc...), v.checks...)
	composition := v.composition(c, len(d.includes) > 0)
	switch {
	case len(res.Problems) > 0:
	case len(d.includes) > 0:
		res.Problems = composition
	default:
		res.Warnings = composition
	}
	if len(res.Problems) > domain.MaxContractProblems {
		res.Problems = append(res.Problems[:domain.MaxContractProblems-1],
			domain.ContractProblem{Message: "too many problems; fix these and upload again to see the rest"})
	}
	res.Contract, res.NameLine, res.StepLines = c, d.featureLine, v.stepLine
	return res, nil
}

// validator turns a draft into a contract and collects the problems found
// after parsing, each on the line of the statement it concerns.
type validator struct {
	d *draft
	// src are problems the reference engine finds while parsing (field
	// "source"), inc include problems, checks the validation problems.
	src, inc, checks []domain.ContractProblem
	// stepLine is each step's When line (the Include line for included
	// steps); depLine the line that made a step depend on another.
	stepLine map[string]int
	depLine  map[[2]string]int
	// groupInclude and dupInclude are the Include lines that brought in a
	// group, or a second step of the same name.
	groupInclude, dupInclude map[string]int
}

func problem(line int, field, msg string, args ...any) domain.ContractProblem {
	if len(args) > 0 {
		msg = fmt.Sprintf(msg, args...)
	}
	return domain.ContractProblem{Line: line, Field: field, Message: msg}
}

// add reports a validation problem.
func (v *validator) add(line int, field, msg string, args ...any) {
	v.checks = append(v.checks, problem(line, field, msg, args...))
}

// source reports a problem found at the end of the parse.
func (v *validator) source(line int, msg string, args ...any) {
	v.src = append(v.src, problem(line, "source", msg, args...))
}

// include reports an include problem.
func (v *validator) include(line int, msg string, args ...any) {
	v.inc = append(v.inc, problem(line, "includes", msg, args...))
}

func (v *validator) build() domain.Contract {
	d := v.d
	c := domain.Contract{Name: d.name, Version: d.version, Description: d.description,
		EntryPoints: []string{}, Parties: []string{}, TerminalSteps: []string{}, Transitions: []domain.Transition{},
		ThreadsLockToVersion: d.lock, AllowMultipleTerminals: d.allowMulti, MultipleTerminalsSeverity: domain.SeverityMinor}
	v.depLine = map[[2]string]int{}
	if len(d.steps) > domain.MaxContractSteps {
		v.source(d.steps[domain.MaxContractSteps].whenLine, "a contract may define at most %d steps, this one has %d", domain.MaxContractSteps, len(d.steps))
		d.steps = d.steps[:domain.MaxContractSteps]
	}
	names := map[string]bool{}
	for _, s := range d.steps {
		names[s.id] = true
		v.stepLine[s.id] = s.whenLine
	}
	defs := map[string]*draftDef{}
	for _, def := range d.defs {
		defs[def.id] = def
	}

	// End-of-parse checks, in the reference engine's order: transitions,
	// then Step blocks (here in source order).
	for _, s := range d.steps {
		if len(s.next) == 0 && (s.retriesLine > 0 || s.nextTimeoutLine > 0) {
			line := max(s.retriesLine, s.nextTimeoutLine)
			v.source(line, "transition timeout/retry rules require a next-step rule for %s", strconv.Quote(s.id))
		}
	}
	for _, def := range d.defs {
		if !names[def.id] {
			v.source(def.line, "Step definition %s has no matching Rule", strconv.Quote(def.id))
		}
	}

	for _, s := range d.steps {
		st := domain.ContractStep{Name: s.id, Owner: s.owner, Type: s.typ, Description: s.description}
		if st.Type == "" {
			st.Type = domain.StepTypeManaged
		}
		if s.owner != "" && !contains(c.Parties, s.owner) {
			c.Parties = append(c.Parties, s.owner)
		}
		for _, f := range s.required {
			st.Required = append(st.Required, f.name)
		}
		for _, f := range s.optional {
			st.Optional = append(st.Optional, f.name)
		}
		if def := defs[s.id]; def != nil {
			v.mergeDefinition(&st, s, def)
		}
		for _, r := range s.rules {
			st.ContentRules = append(st.ContentRules, r.rule)
		}
		for _, r := range s.semantic {
			st.SemanticRules = append(st.SemanticRules, r.rule)
		}
		// A content or semantic rule requires its field: register it so
		// projection keeps it, unless declared (optional is then refused).
		for _, r := range st.ContentRules {
			if !contains(st.Required, r.Field) && !contains(st.Optional, r.Field) {
				st.Required = append(st.Required, r.Field)
			}
		}
		for _, r := range st.SemanticRules {
			if !contains(st.Required, r.Field) && !contains(st.Optional, r.Field) {
				st.Required = append(st.Required, r.Field)
			}
		}
		if n := len(st.Required) + len(st.Optional); n > domain.MaxContextFieldsByStep {
			v.source(s.whenLine, "a step may declare at most %d context fields, %s declares %d", domain.MaxContextFieldsByStep, strconv.Quote(s.id), n)
		}
		// Prerequisites: declared, fresh, then implied by references and
		// semantic context.
		addDep := func(dep string, line int) {
			if !contains(st.DependsOn, dep) {
				st.DependsOn = append(st.DependsOn, dep)
				v.depLine[[2]string{s.id, dep}] = line
			}
		}
		for _, dep := range s.deps {
			if !dep.fresh {
				addDep(dep.step, dep.line)
			}
		}
		for _, dep := range s.deps {
			if dep.fresh {
				st.FreshDependsOn = append(st.FreshDependsOn, dep.step)
				addDep(dep.step, dep.line)
			}
		}
		for _, r := range s.rules {
			if r.rule.Reference != nil {
				addDep(r.rule.Reference.Step, r.line)
			}
		}
		for _, r := range s.semantic {
			for _, cs := range r.rule.ContextSteps {
				addDep(cs, r.ctxLine)
			}
		}
		// Prerequisites have no order: sorted, the compiled contract (and
		// its hash) does not depend on the order of their sentences.
		sort.Strings(st.DependsOn)
		sort.Strings(st.FreshDependsOn)
		v.checkStep(&st, s, names)
		c.Steps = append(c.Steps, st)
		if s.entryLine > 0 {
			c.EntryPoints = append(c.EntryPoints, s.id)
		}
		if s.terminalLine > 0 {
			c.TerminalSteps = append(c.TerminalSteps, s.id)
		}
	}
	for _, s := range d.steps {
		if len(s.next) == 0 {
			continue
		}
		t := domain.Transition{From: s.id, To: s.next, MaxRetries: s.retries, CanRetry: true}
		if s.nextTimeout != "" {
			dur, err := ParseDuration(s.nextTimeout)
			if err != nil {
				v.add(s.nextTimeoutLine, fmt.Sprintf("transitions[%d].timeout", len(c.Transitions)), "%s", err.Error())
			}
			t.Timeout = dur
		}
		c.Transitions = append(c.Transitions, t)
	}
	c.FreeOrder = len(c.Transitions) == 0

	for _, g := range d.groups {
		cg := domain.ContractGroup{Name: g.name, Steps: g.steps, AllMustSucceed: g.all}
		if g.duration != "" {
			dur, err := ParseDuration(g.duration)
			if err != nil {
				msg := "Invalid duration format"
				if reDuration.MatchString(g.duration) {
					msg = err.Error()
				}
				v.add(g.durationLine, "groups."+g.name+".rules.max_combined_duration", "%s", msg)
			}
			cg.MaxCombinedDuration = dur
		}
		c.Groups = append(c.Groups, cg)
	}
	if d.maxDuration != "" {
		dur, err := ParseDuration(d.maxDuration)
		if err != nil {
			v.add(d.maxDurationLine, "validation.max_duration", "%s", err.Error())
		}
		c.MaxDuration = dur
	}
	if d.severity != "" {
		sev, ok := severities[d.severity]
		if !ok {
			v.add(d.severityLine, "validation.multiple_terminals_severity", "Must be one of: minor, warning, major, error")
		} else {
			c.MultipleTerminalsSeverity = sev
		}
	}
	v.deriveEndpoints(&c)
	return c
}

// deriveEndpoints fills in entry points and terminal steps no clause
// declared: steps nothing leads to, and steps that lead nowhere.
func (v *validator) deriveEndpoints(c *domain.Contract) {
	entries, terminals := c.DeriveEndpoints()
	if len(c.EntryPoints) == 0 {
		c.EntryPoints, c.EntryPointsDerived = nonNil(entries), true
	}
	if len(c.TerminalSteps) == 0 {
		c.TerminalSteps, c.TerminalStepsDerived = nonNil(terminals), true
	}
}

// mergeDefinition applies a Step block to its Rule's step.
func (v *validator) mergeDefinition(st *domain.ContractStep, s *draftStep, def *draftDef) {
	if s.descLine > 0 {
		v.source(def.line, "Step description is declared in both Step and Rule for %s", strconv.Quote(s.id))
	}
	if def.description != "" {
		st.Description = def.description
	}
	merge := func(fields []field, into *[]string, other []string) {
		for _, f := range fields {
			if contains(other, f.name) {
				v.source(f.line, "context field %s is both required and optional", strconv.Quote(f.name))
			} else if !contains(*into, f.name) {
				*into = append(*into, f.name)
			}
		}
	}
	merge(def.required, &st.Required, st.Optional)
	merge(def.optional, &st.Optional, st.Required)
	if len(def.meanings) > 0 {
		st.ContextMeanings = def.meanings
	}
}

// checkStep runs the per-step checks of the reference validator.
func (v *validator) checkStep(st *domain.ContractStep, s *draftStep, names map[string]bool) {
	path := "steps." + st.Name
	if len(st.Name) > domain.MaxStepNameLen {
		v.add(s.whenLine, path, "step name must be at most %d characters", domain.MaxStepNameLen)
	}
	if st.Description != "" && (strings.TrimSpace(st.Description) == "" || len(st.Description) > domain.MaxStepDescriptionBytes) {
		line := s.ruleLine
		if s.descLine > 0 {
			line = s.descLine
		}
		v.add(line, path+".description", "Step description must contain text and be at most 500 bytes")
	}
	for _, r := range s.semantic {
		if err := domain.ValidateSemanticRule(r.rule); err != nil {
			line := r.line
			switch {
			case strings.Contains(err.Error(), "min_probability"):
				line = r.confLine
			case strings.Contains(err.Error(), "context step"):
				line = r.ctxLine
			}
			v.add(line, path+".semantic_rules", "%s", err.Error())
		}
		for _, cs := range r.rule.ContextSteps {
			if !names[cs] || cs == st.Name {
				v.add(r.ctxLine, path+".semantic_rules", "Context step must name a different step defined in this contract: %s", cs)
			}
		}
	}
	for _, r := range s.rules {
		if ref := r.rule.Reference; ref != nil && (!names[ref.Step] || ref.Step == st.Name) {
			v.add(r.line, path+".content_rules", "Reference must name a different step defined in this contract: %s", ref.Step)
		}
	}
	switch st.Type {
	case domain.StepTypeManaged, domain.StepTypeExternal, domain.StepTypeHumanInLoop:
	default:
		v.add(s.typLine, path+".type", "Invalid type '%s'. Must be: managed, human_in_loop, or external", st.Type)
	}
	if s.timeout != "" {
		dur, err := ParseDuration(s.timeout)
		if err != nil {
			v.add(s.timeoutLine, path+".timeout", "%s", err.Error())
		}
		st.Timeout = dur
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
