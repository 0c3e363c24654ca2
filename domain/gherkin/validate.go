package gherkin

import (
	"fmt"
	"strconv"

	"github.com/threadengine/engine/domain"
)

// validate runs the reference validator's whole-contract checks on c (the
// composed contract when there are includes), in its order; the problems
// point at the statement concerned.
func (v *validator) validate(c domain.Contract) {
	d := v.d
	draftOf := map[string]*draftStep{}
	for _, s := range d.steps {
		draftOf[s.id] = s
	}
	line := func(step string) int {
		if l := v.stepLine[step]; l > 0 {
			return l
		}
		return d.lastLine
	}
	clauseLine := func(step string, pick func(*draftStep) int) int {
		if s := draftOf[step]; s != nil && pick(s) > 0 {
			return pick(s)
		}
		return line(step)
	}

	if d.name != "" && !reFeatureName.MatchString(c.Name) {
		v.add(d.featureLine, "contract_name", "Must contain only alphanumeric characters and underscores")
	} else if len(c.Name) > domain.MaxContractNameLen {
		v.add(d.featureLine, "contract_name", "Must be at most %d characters", domain.MaxContractNameLen)
	}

	steps := map[string]bool{}
	reported := map[string]bool{}
	for _, s := range c.Steps {
		if steps[s.Name] && !reported[s.Name] {
			reported[s.Name] = true
			v.add(v.dupLine(s.Name), "steps."+s.Name, "Duplicate step ID found. Each step must have a unique ID")
		}
		steps[s.Name] = true
	}

	groups := map[string]bool{}
	for _, g := range c.Groups {
		gl := v.groupLine(g.Name)
		if g.Name == "" || groups[g.Name] || steps[g.Name] {
			v.add(gl, "groups", "Group ID must be nonempty and distinct from every step and group ID")
		}
		groups[g.Name] = true
		for _, s := range g.Steps {
			if s != "" && !steps[s] {
				v.add(gl, "groups."+g.Name+".steps", "Referenced step '%s' does not exist", s)
			}
		}
	}

	explicitEntries := c.EntryPoints
	if c.EntryPointsDerived {
		explicitEntries = nil
	}
	explicitTerminals := c.TerminalSteps
	if c.TerminalStepsDerived {
		explicitTerminals = nil
	}
	for _, e := range explicitEntries {
		if !steps[e] {
			v.add(line(e), "entry_points", "Entry point '%s' is not defined in steps", e)
		}
	}
	for _, t := range explicitTerminals {
		if !steps[t] {
			v.add(line(t), "terminal_steps", "Terminal step '%s' is not defined in steps", t)
		}
	}
	if len(c.Transitions) > 0 {
		reachable := map[string]bool{}
		for _, e := range explicitEntries {
			reachable[e] = true
		}
		for _, t := range c.Transitions {
			for _, to := range t.To {
				reachable[to] = true
			}
		}
		for _, t := range explicitTerminals {
			if !reachable[t] {
				v.add(clauseLine(t, func(s *draftStep) int { return s.terminalLine }), "terminal_steps."+t,
					"Terminal step '%s' is not reachable from any transition", t)
			}
		}
	}
	for i, t := range c.Transitions {
		tl := clauseLine(t.From, func(s *draftStep) int { return s.nextLine })
		if !steps[t.From] {
			v.add(tl, fmt.Sprintf("transitions[%d].from", i), "Step '%s' is not defined in steps", t.From)
		}
		for _, to := range t.To {
			if !steps[to] {
				v.add(tl, fmt.Sprintf("transitions[%d].to", i), "Step '%s' is not defined in steps", to)
			}
		}
	}

	v.checkDependencies(c, steps, line)

	if len(c.Transitions) > 0 {
		in, out := map[string]bool{}, map[string]bool{}
		for _, t := range c.Transitions {
			out[t.From] = true
			for _, to := range t.To {
				in[to] = true
			}
		}
		for _, s := range c.Steps {
			if !contains(explicitEntries, s.Name) && !in[s.Name] {
				v.add(line(s.Name), "steps."+s.Name, "Step '%s' has no incoming transitions and is not an entry point", s.Name)
			}
			if !contains(explicitTerminals, s.Name) && !out[s.Name] {
				v.add(line(s.Name), "steps."+s.Name, "Step '%s' has no outgoing transitions and is not a terminal step", s.Name)
			}
		}
	}

	v.checkContext(c, draftOf, line)
}

// checkDependencies: prerequisites name other, defined steps once, and
// form no cycle (reported once).
func (v *validator) checkDependencies(c domain.Contract, steps map[string]bool, line func(string) int) {
	depLine := func(step, dep string) int {
		if l := v.depLine[[2]string{step, dep}]; l > 0 {
			return l
		}
		return line(step)
	}
	graph := map[string][]string{}
	for _, s := range c.Steps {
		seen := map[string]bool{}
		field := "steps." + s.Name + ".depends_on"
		for _, dep := range s.DependsOn {
			switch {
			case dep == s.Name:
				v.add(depLine(s.Name, dep), field, "Step '%s' cannot depend on itself", s.Name)
			case !steps[dep]:
				v.add(depLine(s.Name, dep), field, "Dependency '%s' is not defined in steps", dep)
			case seen[dep]:
				v.add(depLine(s.Name, dep), field, "Dependency '%s' is listed more than once", dep)
			default:
				graph[s.Name] = append(graph[s.Name], dep)
			}
			seen[dep] = true
		}
	}
	const (
		unvisited = iota
		visiting
		visited
	)
	state := map[string]int{}
	via := map[string]string{} // the prerequisite a cycle was found through
	var visit func(string) bool
	visit = func(id string) bool {
		switch state[id] {
		case visiting:
			return true
		case visited:
			return false
		}
		state[id] = visiting
		for _, dep := range graph[id] {
			if visit(dep) {
				via[id] = dep
				return true
			}
		}
		state[id] = visited
		return false
	}
	for _, s := range c.Steps {
		if state[s.Name] == unvisited && visit(s.Name) {
			v.add(depLine(s.Name, via[s.Name]), "steps.depends_on", "Step dependencies must not contain a cycle")
			break
		}
	}
}

// checkContext: the reference validator's business-context checks.
func (v *validator) checkContext(c domain.Contract, draftOf map[string]*draftStep, line func(string) int) {
	byName := map[string]domain.ContractStep{}
	for _, s := range c.Steps {
		if _, ok := byName[s.Name]; !ok {
			byName[s.Name] = s
		}
	}
	for _, s := range c.Steps {
		ds := draftOf[s.Name]
		ruleLine := func(i int) int {
			if ds != nil && i < len(ds.rules) {
				return ds.rules[i].line
			}
			return line(s.Name)
		}
		semLine := func(i int) int {
			if ds != nil && i < len(ds.semantic) {
				return ds.semantic[i].line
			}
			return line(s.Name)
		}
		path := "steps." + s.Name
		for i, r := range s.ContentRules {
			if r.Reference == nil {
				continue
			}
			ref, ok := byName[r.Reference.Step]
			if ok && ref.HasRegisteredContext() && !declares(ref, r.Reference.Field) {
				v.add(ruleLine(i), path+".content_rules", "Referenced field %s is not declared by step %s",
					strconv.Quote(r.Reference.Field), strconv.Quote(r.Reference.Step))
			}
		}
		if !s.HasRegisteredContext() {
			continue
		}
		for i, r := range s.ContentRules {
			if !declares(s, r.Field) {
				v.add(ruleLine(i), path+".content_rules", "Content rule field %s must be declared in business_context", strconv.Quote(r.Field))
			}
			if contains(s.Optional, r.Field) {
				v.add(ruleLine(i), path+".content_rules", "Content rule requires field %s, which is declared optional", strconv.Quote(r.Field))
			}
		}
		for i, r := range s.SemanticRules {
			if !declares(s, r.Field) {
				v.add(semLine(i), path+".semantic_rules", "Semantic rule field %s must be declared in business_context", strconv.Quote(r.Field))
			}
			if contains(s.Optional, r.Field) {
				v.add(semLine(i), path+".semantic_rules", "Semantic rule requires field %s, which is declared optional", strconv.Quote(r.Field))
			}
		}
		for _, f := range s.Optional {
			if contains(s.Required, f) {
				v.add(line(s.Name), path+".business_context", "Field '%s' appears in both required and optional", f)
			}
		}
		for _, f := range sortedKeys(s.ContextMeanings) {
			m := s.ContextMeanings[f]
			if !declares(s, f) || len(m) > domain.MaxStepDescriptionBytes || m == "" {
				l := line(s.Name)
				if def := v.defOf(s.Name); def != nil && def.meaningLines[f] > 0 {
					l = def.meaningLines[f]
				}
				v.add(l, path+".business_context.descriptions",
					"Description for context field %s must refer to a declared field and contain 1–500 bytes of text", strconv.Quote(f))
			}
		}
	}
}

func declares(s domain.ContractStep, f string) bool {
	return contains(s.Required, f) || contains(s.Optional, f)
}

func (v *validator) defOf(id string) *draftDef {
	for _, def := range v.d.defs {
		if def.id == id {
			return def
		}
	}
	return nil
}

func (v *validator) groupLine(name string) int {
	for _, g := range v.d.groups {
		if g.name == name {
			return g.line
		}
	}
	if l := v.groupInclude[name]; l > 0 {
		return l
	}
	return v.d.lastLine
}

// dupLine is the line of the second definition of a step (an included one).
func (v *validator) dupLine(name string) int {
	if l := v.dupInclude[name]; l > 0 {
		return l
	}
	return v.stepLine[name]
}
