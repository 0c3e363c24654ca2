// Package gherkin parses and compiles Threadify's Gherkin contract language into the engine's contract model.
package gherkin

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/threadengine/engine/domain"
)

// The parse builds a draft: what the source says, with the line of every
// statement, so compilation and validation can point at lines. A line in
// error is reported and parsing goes on with the next one, so one preview
// lists every problem.

type field struct {
	name string
	line int
}

type ruleRef struct {
	rule domain.ContentRule
	line int
}

type semRef struct {
	rule                    domain.SemanticRule
	line, ctxLine, confLine int
}

type depRef struct {
	step  string
	fresh bool
	line  int
}

// draftStep is one Rule block: one executable step.
type draftStep struct {
	id                 string
	ruleLine, whenLine int
	title              string
	owner              string
	ownerStated        bool // an owner clause was read, even one in error
	description        string
	descLine           int
	typ                string
	typLine            int
	deps               []depRef
	entryLine          int
	terminalLine       int
	next               []string
	nextLine           int
	timeout            string
	timeoutLine        int
	nextTimeout        string
	nextTimeoutLine    int
	retries            int
	retriesLine        int
	required, optional []field
	rules              []ruleRef
	semantic           []*semRef
}

// draftDef is one Step block: a step's business definition.
type draftDef struct {
	id                 string
	line               int
	description        string
	descLine           int
	required, optional []field
	meanings           map[string]string
	meaningLines       map[string]int
}

type draftGroup struct {
	name         string
	line         int
	steps        []string
	all          bool
	duration     string
	durationLine int
}

type draftInclude struct {
	name    string
	version int
	line    int
}

type draft struct {
	name, description string
	featureLine       int
	version           int
	includes          []draftInclude
	maxDuration       string
	maxDurationLine   int
	allowMulti        bool
	severity          string
	severityLine      int
	lock              bool
	steps             []*draftStep
	defs              []*draftDef
	groups            []*draftGroup
	lastLine          int
	ruleSeen          bool
	problems          []domain.ContractProblem
	lineOfStep        map[string]int
}

type blockKind int

const (
	noBlock blockKind = iota
	backgroundBlock
	stepBlock
	ruleBlock
	groupBlock
)

type parser struct {
	d *draft

	feature     bool
	block       blockKind
	metadata    map[string]bool
	background  bool
	seen        map[string]bool // duplicate keys within the block
	first       bool            // the block's first clause (Then/Given) was read
	waitingWhen bool
	// discard: the block's header was refused; its clauses are still
	// checked but nothing is kept.
	discard bool
	step    *draftStep
	def     *draftDef
	group   *draftGroup
	line    int
}

func (p *parser) fail(msg string, args ...any) {
	if len(args) > 0 {
		msg = fmt.Sprintf(msg, args...)
	}
	p.d.problems = append(p.d.problems, domain.ContractProblem{Line: p.line, Field: "source", Message: msg})
}

func (p *parser) failErr(err error) { p.fail("%s", err.Error()) }

// unique reports whether key is new in the current block.
func (p *parser) unique(key string) bool {
	if p.seen[key] {
		return false
	}
	p.seen[key] = true
	return true
}

// parse reads src into a draft. It stops early only when the first
// statement is not a Feature line: nothing after it can be understood.
func parse(src string) *draft {
	d := &draft{version: 1, lineOfStep: map[string]int{}}
	p := &parser{d: d, metadata: map[string]bool{}, seen: map[string]bool{}}
	lines := strings.Split(strings.TrimPrefix(src, "\ufeff"), "\n")
	d.lastLine = len(lines)
	for i, raw := range lines {
		p.line = i + 1
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !p.feature {
			if !strings.HasPrefix(line, "Feature:") {
				p.fail("expected Feature: contract_name")
				return d
			}
			p.feature = true
			d.featureLine = p.line
			d.name = strings.TrimSpace(strings.TrimPrefix(line, "Feature:"))
			if d.name == "" {
				p.fail("Feature name cannot be empty")
			}
			d.description = d.name
			continue
		}
		p.statement(line)
	}
	p.line = d.lastLine
	if !p.feature {
		p.fail("expected Feature: contract_name")
		return d
	}
	p.finishBlock()
	if !d.ruleSeen && len(d.includes) == 0 {
		p.fail("at least one Rule or Include is required")
	}
	return d
}

func (p *parser) statement(line string) {
	d := p.d
	switch {
	case strings.HasPrefix(line, "Version:") || strings.HasPrefix(line, "Description:") && p.block != stepBlock:
		key, value, _ := strings.Cut(line, ":")
		value = strings.TrimSpace(value)
		if p.block != noBlock || p.metadata[key] {
			p.fail("metadata must appear once, before Background or Rule")
			return
		}
		p.metadata[key] = true
		if key == "Version" {
			v, err := strconv.Atoi(value)
			switch {
			case errors.Is(err, strconv.ErrRange):
				p.fail("Version must be at most %d", domain.MaxContractVersion)
			case err != nil || v < 1:
				p.fail("Version must be a positive integer")
			case v > domain.MaxContractVersion:
				p.fail("Version must be at most %d", domain.MaxContractVersion)
			default:
				d.version = v
			}
			return
		}
		if value == "" {
			p.fail("Description cannot be empty")
			return
		}
		d.description = value
	case strings.HasPrefix(line, "Include:"):
		p.include(line)
	case strings.HasPrefix(line, "Rule:") || line == "Background:" || strings.HasPrefix(line, "Group:") || strings.HasPrefix(line, "Step:"):
		p.header(line)
	default:
		switch p.block {
		case stepBlock:
			p.defClause(line)
		case backgroundBlock:
			p.backgroundClause(line)
		case groupBlock:
			p.groupClause(line)
		case ruleBlock:
			p.ruleLine(line)
		default:
			p.fail("expected Background: or Rule:")
		}
	}
}

func (p *parser) include(line string) {
	if p.block != noBlock {
		p.fail("Include must appear before Background or Rule")
		return
	}
	m := reInclude.FindStringSubmatch(line)
	if m == nil {
		p.fail("Include must use contract_name:positive_version")
		return
	}
	v, err := strconv.Atoi(m[2])
	if err != nil || v < 1 || v > domain.MaxContractVersion {
		p.fail("Include version must be a positive integer")
		return
	}
	for _, in := range p.d.includes {
		if in.name == m[1] {
			p.fail("contract may be included only once: %s", m[1])
			return
		}
	}
	p.d.includes = append(p.d.includes, draftInclude{name: m[1], version: v, line: p.line})
}

// finishBlock checks what a block must contain once it ends (at the next
// header, or the end of the source: the line reported).
func (p *parser) finishBlock() {
	if p.discard {
		return
	}
	switch p.block {
	case groupBlock:
		if len(p.group.steps) < 2 {
			p.fail("Group requires at least two parallel steps")
		}
	case stepBlock:
		if p.def.description == "" {
			p.fail(`Step requires: Description: "business meaning"`)
		}
	case ruleBlock:
		if p.waitingWhen {
			p.fail(`Rule requires: When step "name" is submitted`)
		} else if !p.step.ownerStated {
			p.fail(`each step requires: Then owner must be "party"`)
		}
	}
}

func (p *parser) header(line string) {
	d := p.d
	p.finishBlock()
	p.seen = map[string]bool{}
	p.first, p.discard, p.waitingWhen = false, false, false
	p.step, p.def, p.group = nil, nil, nil
	prev := p.block
	switch {
	case line == "Background:":
		p.block = backgroundBlock
		if p.background || prev != noBlock {
			p.fail("Background must appear once, before Step, Group, or Rule blocks")
			p.discard = true
		}
		p.background = true
	case strings.HasPrefix(line, "Step:"):
		p.block = stepBlock
		p.def = &draftDef{line: p.line}
		p.def.id = p.named(line, reStepHeader, "Step", "duplicate Step definition %s", func(id string) bool {
			for _, other := range d.defs {
				if other.id == id {
					return true
				}
			}
			return false
		})
		if !p.discard {
			d.defs = append(d.defs, p.def)
		}
	case strings.HasPrefix(line, "Group:"):
		p.block = groupBlock
		p.group = &draftGroup{line: p.line}
		p.group.name = p.named(line, reGroupHeader, "Group", "duplicate group %s", func(name string) bool {
			for _, other := range d.groups {
				if other.name == name {
					return true
				}
			}
			return false
		})
		if !p.discard {
			d.groups = append(d.groups, p.group)
		}
	default:
		p.block = ruleBlock
		d.ruleSeen = true
		p.waitingWhen = true
		p.step = &draftStep{ruleLine: p.line, title: strings.TrimSpace(strings.TrimPrefix(line, "Rule:"))}
		if p.step.title == "" {
			p.fail("Rule title cannot be empty")
		}
	}
}

// named reads the quoted name of a Step or Group header; a refused one
// discards the block (its clauses are still checked).
func (p *parser) named(line string, re *regexp.Regexp, what, dup string, taken func(string) bool) string {
	m := re.FindStringSubmatch(line)
	if m == nil {
		p.fail("%s requires a quoted name", what)
		p.discard = true
		return ""
	}
	name, ok := p.quoted(m[1])
	if !ok {
		p.discard = true
		return ""
	}
	if taken(name) {
		p.fail(dup, strconv.Quote(name))
		p.discard = true
		return ""
	}
	return name
}

// once reports whether key is new in the block; a repeat is reported
// with msg.
func (p *parser) once(key, msg string) bool {
	if !p.unique(key) {
		p.fail("%s", msg)
		return false
	}
	return true
}

// quoted reads a quoted value, reporting a bad one.
func (p *parser) quoted(q string) (string, bool) {
	v, err := unquote(q)
	if err != nil {
		p.failErr(err)
		return "", false
	}
	return v, true
}

// single reads a sentence whose only value is quoted (re's first group),
// allowed once per block, and gives the value to set.
func (p *parser) single(re *regexp.Regexp, clause, key, dup string, set func(string)) {
	if !p.once(key, dup) {
		return
	}
	if v, ok := p.quoted(re.FindStringSubmatch(clause)[1]); ok {
		set(v)
	}
}

// defClause reads a Step block line: current syntax, or the legacy one
// with Given/And.
func (p *parser) defClause(line string) {
	clause, legacy := line, false
	if rest, ok := strings.CutPrefix(line, "Given "); ok {
		clause, legacy = rest, true
	} else if rest, ok := strings.CutPrefix(line, "And "); ok {
		clause, legacy = rest, true
	}
	descRE, ctxRE := reDefDesc, reDefContext
	if legacy {
		descRE, ctxRE = reLegacyDesc, reLegacyCtx
	}
	def := p.def
	switch {
	case descRE.MatchString(clause):
		p.single(descRE, clause, "description", "duplicate Step description", func(v string) { def.description, def.descLine = v, p.line })
	case ctxRE.MatchString(clause):
		m := ctxRE.FindStringSubmatch(clause)
		f, ok := p.quoted(m[2])
		if !ok || !p.once("context:"+f, "duplicate or conflicting Step context field "+strconv.Quote(f)) {
			return
		}
		meaning := ""
		if m[3] != "" {
			if meaning, ok = p.quoted(m[3]); !ok {
				return
			}
		}
		if strings.EqualFold(m[1], "required") {
			def.required = append(def.required, field{f, p.line})
		} else {
			def.optional = append(def.optional, field{f, p.line})
		}
		if meaning != "" {
			if def.meanings == nil {
				def.meanings, def.meaningLines = map[string]string{}, map[string]int{}
			}
			def.meanings[f], def.meaningLines[f] = meaning, p.line
		}
	default:
		p.fail("unsupported Step clause: %s", clause)
	}
}

// clause strips the keyword a block's lines start with: first (Given or
// Then) for its first clause, And after. A wrong keyword is reported and
// the clause still read when the line starts with either keyword.
func (p *parser) clause(line, first, msg string) (string, bool) {
	want := "And "
	if !p.first {
		want = first
	}
	if rest, ok := strings.CutPrefix(line, want); ok {
		p.first = true
		return rest, true
	}
	p.fail("%s", msg)
	for _, kw := range []string{first, "And "} {
		if rest, ok := strings.CutPrefix(line, kw); ok {
			p.first = true
			return rest, true
		}
	}
	return "", false
}

func (p *parser) backgroundClause(line string) {
	clause, ok := p.clause(line, "Given ", "Background requires Given followed by And clauses")
	if !ok {
		return
	}
	// A refused Background's clauses are checked, not kept.
	d, ln := p.d, p.line
	if p.discard {
		d = &draft{}
	}
	switch {
	case reThreadDur.MatchString(clause):
		p.single(reThreadDur, clause, "duration", "duplicate thread duration rule", func(v string) { d.maxDuration, d.maxDurationLine = v, ln })
	case clause == "multiple terminal steps are allowed":
		if p.once("terminals", "duplicate multiple-terminal rule") {
			d.allowMulti = true
		}
	case reSeverity.MatchString(clause):
		p.single(reSeverity, clause, "terminal-severity", "duplicate terminal severity rule", func(v string) { d.severity, d.severityLine = v, ln })
	case clause == "threads lock to this version":
		if p.once("version-lock", "duplicate version lock rule") {
			d.lock = true
		}
	default:
		p.fail("unsupported Background clause: %s", clause)
	}
}

func (p *parser) groupClause(line string) {
	clause, ok := p.clause(line, "Given ", "Group requires Given followed by And clauses")
	if !ok {
		return
	}
	g := p.group
	switch {
	case reParallel.MatchString(clause):
		if !p.once("steps", "duplicate parallel steps clause") {
			return
		}
		steps, err := quotedList(reParallel.FindStringSubmatch(clause)[1])
		if err != nil {
			p.failErr(err)
			// Known, so the end of the block does not also report it short.
			g.steps = []string{"", ""}
			return
		}
		g.steps = steps
	case clause == "all parallel steps must succeed":
		if p.once("all", "duplicate group success rule") {
			g.all = true
		}
	case reGroupDur.MatchString(clause):
		p.single(reGroupDur, clause, "duration", "duplicate group duration rule", func(v string) { g.duration, g.durationLine = v, p.line })
	default:
		p.fail("unsupported Group clause: %s", clause)
	}
}

// ruleLine reads a Rule block line: its When line, then its clauses.
func (p *parser) ruleLine(line string) {
	d := p.d
	if !p.waitingWhen {
		p.ruleClause(line)
		return
	}
	p.waitingWhen = false
	m := reWhen.FindStringSubmatch(line)
	if m == nil {
		p.fail(`Rule requires: When step "name" is submitted`)
		p.discard = true
		if strings.HasPrefix(line, "Then ") || strings.HasPrefix(line, "And ") {
			p.ruleClause(line)
		}
		return
	}
	id, ok := p.quoted(m[1])
	if !ok {
		p.discard = true
		return
	}
	p.step.id, p.step.whenLine = id, p.line
	p.step.description = p.step.title
	if _, dup := d.lineOfStep[id]; dup {
		p.fail("duplicate step %s; put its constraints in one Rule", strconv.Quote(id))
		p.discard = true
		return
	}
	d.lineOfStep[id] = p.line
	d.steps = append(d.steps, p.step)
}

func (p *parser) ruleClause(line string) {
	clause, ok := p.clause(line, "Then ", "step constraints require Then followed by And clauses")
	if !ok {
		return
	}
	s, ln := p.step, p.line
	switch {
	case reStepDesc.MatchString(clause):
		p.single(reStepDesc, clause, "description", "duplicate step description", func(v string) { s.description, s.descLine = v, ln })
	case reStepType.MatchString(clause):
		p.single(reStepType, clause, "type", "duplicate step type", func(v string) { s.typ, s.typLine = v, ln })
	case reOwner.MatchString(clause):
		if p.once("owner", "duplicate owner rule") {
			s.ownerStated = true
			if v, ok := p.quoted(reOwner.FindStringSubmatch(clause)[1]); ok {
				s.owner = v
			}
		}
	case reFreshDep.MatchString(clause), reDep.MatchString(clause):
		fresh := reFreshDep.MatchString(clause)
		re := reDep
		if fresh {
			re = reFreshDep
		}
		if v, ok := p.quoted(re.FindStringSubmatch(clause)[1]); ok && p.once("dependency:"+v, "duplicate prerequisite") {
			s.deps = append(s.deps, depRef{step: v, fresh: fresh, line: ln})
		}
	case rePresence.MatchString(clause):
		m := rePresence.FindStringSubmatch(clause)
		f, ok := p.quoted(m[1])
		if !ok || !p.once("context:"+f, "duplicate or conflicting content rule") {
			return
		}
		if m[2] == "must be present" {
			s.required = append(s.required, field{f, ln})
		} else {
			s.optional = append(s.optional, field{f, ln})
		}
	case isContentClause(clause):
		r, err := contentClause(clause)
		if err != nil {
			p.failErr(err)
			return
		}
		key := "content-rule:" + r.Field + ":" + string(r.Operator)
		if r.Operator == domain.OpEquals {
			key += ":" + r.Value
		}
		if p.once(key, "duplicate content constraint") {
			s.rules = append(s.rules, ruleRef{r, ln})
		}
	case reSemQuestion.MatchString(clause):
		m := reSemQuestion.FindStringSubmatch(clause)
		f, ok := p.quoted(m[1])
		if !ok {
			return
		}
		q, ok := p.quoted(m[2])
		if ok && p.once("semantic:"+f, "duplicate semantic question for "+f) {
			s.semantic = append(s.semantic, &semRef{rule: domain.SemanticRule{Field: f, Question: q}, line: ln})
		}
	case reSemContext.MatchString(clause):
		m := reSemContext.FindStringSubmatch(clause)
		f, ok := p.quoted(m[1])
		if !ok || !p.once("semantic-context:"+f, "duplicate semantic context for "+f) {
			return
		}
		steps, err := quotedList(m[2])
		if err != nil {
			p.failErr(err)
			return
		}
		if sr := p.question(s, f, "context"); sr != nil {
			sr.rule.ContextSteps, sr.ctxLine = steps, ln
		}
	case reSemConf.MatchString(clause):
		m := reSemConf.FindStringSubmatch(clause)
		f, ok := p.quoted(m[1])
		if !ok || !p.once("semantic-confidence:"+f, "duplicate semantic confidence for "+f) {
			return
		}
		sr := p.question(s, f, "confidence")
		if sr == nil {
			return
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			p.fail("semantic confidence must be a number")
			return
		}
		sr.rule.MinProbability, sr.confLine = v, ln
	case clause == "this step is an entry point":
		if p.once("entry", "duplicate entry point rule") {
			s.entryLine = ln
		}
	case clause == "this step is terminal":
		if p.once("terminal", "duplicate terminal rule") {
			s.terminalLine = ln
		}
	case reTimeout.MatchString(clause):
		p.single(reTimeout, clause, "timeout", "duplicate step timeout rule", func(v string) { s.timeout, s.timeoutLine = v, ln })
	case reNext.MatchString(clause):
		if !p.once("next", "duplicate next-step rule") {
			return
		}
		steps, err := quotedList(reNext.FindStringSubmatch(clause)[1])
		if err != nil {
			p.failErr(err)
			return
		}
		s.next, s.nextLine = steps, ln
	case reNextTimeout.MatchString(clause):
		p.single(reNextTimeout, clause, "transition_timeout", "duplicate transition timeout rule", func(v string) { s.nextTimeout, s.nextTimeoutLine = v, ln })
	case reRetry.MatchString(clause):
		if !p.once("retries", "duplicate retry rule") {
			return
		}
		n, err := strconv.Atoi(reRetry.FindStringSubmatch(clause)[1])
		if err != nil || n < 1 {
			p.fail("retry limit must be a positive integer; zero means unlimited in existing contracts")
			return
		}
		s.retries, s.retriesLine = n, ln
	default:
		p.fail("unsupported step constraint: %s", clause)
	}
}

// question finds the semantic question a context or confidence clause
// refines; it must come first.
func (p *parser) question(s *draftStep, f, what string) *semRef {
	sr := s.semanticFor(f)
	if sr == nil {
		p.fail("semantic %s requires a question for %s", what, f)
	}
	return sr
}

func (s *draftStep) semanticFor(f string) *semRef {
	for _, r := range s.semantic {
		if r.rule.Field == f {
			return r
		}
	}
	return nil
}
