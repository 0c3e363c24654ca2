package gherkin

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/threadengine/engine/domain"
)

// MaxIncludes bounds the Include lines of one contract.
const MaxIncludes = 16

// compose expands the Include lines: each published version's compiled
// steps, parties, transitions and groups are appended after the
// contract's own, in Include order. Thread duration and terminal severity
// are inherited when the contract sets none (different values conflict);
// flags are OR-ed; the contract's declared entry points and terminal steps
// win, else the union of the included ones', else they are derived from
// the combined graph.
func (v *validator) compose(c domain.Contract, resolve Resolver) (domain.Contract, error) {
	d := v.d
	v.groupInclude, v.dupInclude = map[string]int{}, map[string]int{}
	if len(d.includes) > MaxIncludes {
		v.include(d.includes[MaxIncludes].line, "A contract may include at most %d other contracts", MaxIncludes)
		return c, nil
	}
	if resolve == nil {
		v.include(d.includes[0].line, "Includes must be resolved against published contract versions; preview or upload this contract on the engine")
		return c, nil
	}
	var entries, terminals []string
	if c.EntryPointsDerived {
		c.EntryPoints = nil
	}
	if c.TerminalStepsDerived {
		c.TerminalSteps = nil
	}
	durationSet, severitySet := d.maxDuration != "", d.severity != ""
	groups := map[string]bool{}
	for _, g := range c.Groups {
		groups[g.Name] = true
	}
	for _, in := range d.includes {
		pub, err := resolve(in.name, in.version)
		if err != nil {
			return c, err
		}
		switch {
		case !pub.Exists:
			v.include(in.line, "Included contract %s was not found", strconv.Quote(in.name))
			continue
		case !pub.Found:
			v.include(in.line, "Included contract %s version %d was not found", strconv.Quote(in.name), in.version)
			continue
		}
		ic := pub.Contract
		if ic.Name != in.name || ic.Version != in.version {
			v.include(in.line, "Included contract %s version %d has no valid compiled content", strconv.Quote(in.name), in.version)
			continue
		}
		if len(c.Steps)+len(ic.Steps) > domain.MaxContractSteps {
			v.include(in.line, "Expanded contract exceeds %d steps", domain.MaxContractSteps)
			return c, nil
		}
		for _, s := range ic.Steps {
			if _, dup := v.stepLine[s.Name]; dup {
				if _, again := v.dupInclude[s.Name]; !again {
					v.dupInclude[s.Name] = in.line
				}
			} else {
				v.stepLine[s.Name] = in.line
			}
			c.Steps = append(c.Steps, s)
		}
		for _, p := range ic.Parties {
			if !contains(c.Parties, p) {
				c.Parties = append(c.Parties, p)
			}
		}
		c.Transitions = append(c.Transitions, ic.Transitions...)
		if ic.MaxDuration > 0 {
			if durationSet && c.MaxDuration != ic.MaxDuration {
				v.include(in.line, "Included contracts have conflicting thread durations")
			} else if !durationSet {
				c.MaxDuration, durationSet = ic.MaxDuration, true
			}
		}
		// An included minor severity is the engine's default: not a choice
		// that can conflict.
		if ic.MultipleTerminalsSeverity != "" && ic.MultipleTerminalsSeverity != domain.SeverityMinor {
			if severitySet && c.MultipleTerminalsSeverity != ic.MultipleTerminalsSeverity {
				v.include(in.line, "Included contracts have conflicting multiple-terminal severities")
			} else if !severitySet {
				c.MultipleTerminalsSeverity, severitySet = ic.MultipleTerminalsSeverity, true
			}
		}
		c.AllowMultipleTerminals = c.AllowMultipleTerminals || ic.AllowMultipleTerminals
		c.ThreadsLockToVersion = c.ThreadsLockToVersion || ic.ThreadsLockToVersion
		for _, g := range ic.Groups {
			if groups[g.Name] {
				v.include(in.line, "Duplicate group ID %s in combined contract", strconv.Quote(g.Name))
				continue
			}
			groups[g.Name] = true
			v.groupInclude[g.Name] = in.line
			c.Groups = append(c.Groups, g)
		}
		if !ic.EntryPointsDerived {
			for _, e := range ic.EntryPoints {
				if !contains(entries, e) {
					entries = append(entries, e)
				}
			}
		}
		if !ic.TerminalStepsDerived {
			for _, t := range ic.TerminalSteps {
				if !contains(terminals, t) {
					terminals = append(terminals, t)
				}
			}
		}
	}
	if len(c.EntryPoints) == 0 {
		c.EntryPoints, c.EntryPointsDerived = entries, false
	}
	if len(c.TerminalSteps) == 0 {
		c.TerminalSteps, c.TerminalStepsDerived = terminals, false
	}
	// Ordering is judged on the combined contract: free only when no
	// contract in it has a next-step rule.
	c.FreeOrder = len(c.Transitions) == 0
	c.EntryPoints, c.TerminalSteps = nonNil(c.EntryPoints), nonNil(c.TerminalSteps)
	derivedE, derivedT := c.DeriveEndpoints()
	if len(c.EntryPoints) == 0 {
		c.EntryPoints, c.EntryPointsDerived = nonNil(derivedE), true
	}
	if len(c.TerminalSteps) == 0 {
		c.TerminalSteps, c.TerminalStepsDerived = nonNil(derivedT), true
	}
	return c, nil
}

// composition finds rules that cannot all hold together: contradictory
// content rules, no entry point or terminal step, a prerequisite that is a
// terminal step, steps no run can reach. For a contract with includes they
// refuse it (as in the reference engine); otherwise they are warnings.
func (v *validator) composition(c domain.Contract, combined bool) []domain.ContractProblem {
	noun := "Contract"
	if combined {
		noun = "Combined contract"
	}
	line := func(step string) int {
		if l := v.stepLine[step]; l > 0 {
			return l
		}
		return v.d.lastLine
	}
	var out []domain.ContractProblem
	for _, s := range c.Steps {
		for _, msg := range domain.ContentConflicts(s.ContentRules) {
			out = append(out, problem(line(s.Name), "steps."+s.Name+".content_rules", "%s", msg))
		}
	}
	if len(c.Steps) == 0 {
		return append(out, problem(v.d.lastLine, "steps", "%s has no steps", noun))
	}
	if len(c.EntryPoints) == 0 {
		return append(out, problem(v.d.featureLine, "entry_points", "%s has no entry point", noun))
	}
	if len(c.TerminalSteps) == 0 {
		out = append(out, problem(v.d.featureLine, "terminal_steps", "%s has no terminal step", noun))
	}
	terminal := map[string]bool{}
	for _, t := range c.TerminalSteps {
		terminal[t] = true
	}
	for _, s := range c.Steps {
		for _, dep := range s.DependsOn {
			if terminal[dep] {
				l := v.depLine[[2]string{s.Name, dep}]
				if l == 0 {
					l = line(s.Name)
				}
				out = append(out, problem(l, "steps."+s.Name+".depends_on",
					"Step %s depends on terminal step %s, which completes the thread", strconv.Quote(s.Name), strconv.Quote(dep)))
			}
		}
	}
	var reached map[string]bool
	switch {
	case len(c.Transitions) == 0:
		if p, bad := freeReachability(c, terminal); bad {
			p.Line = v.d.featureLine
			return append(out, p)
		}
		return out
	case len(c.Steps) <= 18:
		reached = exactReachability(c, terminal)
	}
	if reached == nil {
		reached = structuralReachability(c, terminal)
	}
	n := 0
	for _, s := range c.Steps {
		if reached[s.Name] {
			continue
		}
		msg := fmt.Sprintf("Step %s cannot be reached from an entry point before the thread completes", strconv.Quote(s.Name))
		if len(s.DependsOn) > 0 {
			msg += "; check its prerequisites and strict transitions"
		}
		out = append(out, problem(line(s.Name), "steps."+s.Name, "%s", msg))
		if n++; n == 20 {
			break
		}
	}
	return out
}

// freeReachability: without strict transitions any step may follow any
// other, so a thread can run when some entry point has no prerequisite,
// and goes on past it unless every usable entry point is terminal.
func freeReachability(c domain.Contract, terminal map[string]bool) (domain.ContractProblem, bool) {
	deps := map[string]int{}
	for _, s := range c.Steps {
		deps[s.Name] = len(s.DependsOn)
	}
	started, continuing := false, false
	usable := map[string]bool{}
	for _, e := range c.EntryPoints {
		if deps[e] == 0 {
			started, usable[e] = true, true
			if !terminal[e] {
				continuing = true
			}
		}
	}
	if !started {
		return domain.ContractProblem{Field: "entry_points", Message: "Every entry point requires a step that cannot have succeeded before the thread starts"}, true
	}
	if !continuing {
		for _, s := range c.Steps {
			if !usable[s.Name] {
				return domain.ContractProblem{Field: "entry_points", Message: "All usable entry points complete the thread before other steps can run"}, true
			}
		}
	}
	return domain.ContractProblem{}, false
}

// exactReachability explores (step, steps succeeded so far) states from the
// entry points along strict transitions, taking a step only once its
// prerequisites have succeeded; it gives up (nil) past 100 000 states.
// Freshness, content and retries are ignored: a step it cannot reach is
// unreachable for sure.
func exactReachability(c domain.Contract, terminal map[string]bool) map[string]bool {
	index := map[string]int{}
	for i, s := range c.Steps {
		if _, ok := index[s.Name]; !ok {
			index[s.Name] = i
		}
	}
	deps := make([]uint64, len(c.Steps))
	for i, s := range c.Steps {
		for _, d := range s.DependsOn {
			if j, ok := index[d]; ok {
				deps[i] |= 1 << j
			}
		}
	}
	adj := make([][]int, len(c.Steps))
	for _, t := range c.Transitions {
		from, ok := index[t.From]
		if !ok {
			continue
		}
		for _, to := range t.To {
			if j, ok := index[to]; ok {
				adj[from] = append(adj[from], j)
			}
		}
	}
	type state struct {
		at   int
		seen uint64
	}
	visited := map[state]bool{}
	var queue []state
	for _, e := range c.EntryPoints {
		if i, ok := index[e]; ok && deps[i] == 0 {
			st := state{i, 1 << i}
			if !visited[st] {
				visited[st] = true
				queue = append(queue, st)
			}
		}
	}
	reached := map[string]bool{}
	for head := 0; head < len(queue); head++ {
		if len(visited) > 100000 {
			return nil
		}
		st := queue[head]
		name := c.Steps[st.at].Name
		reached[name] = true
		if terminal[name] {
			continue
		}
		for _, next := range adj[st.at] {
			if deps[next]&st.seen != deps[next] {
				continue
			}
			ns := state{next, st.seen | 1<<next}
			if !visited[ns] {
				visited[ns] = true
				queue = append(queue, ns)
			}
		}
	}
	return reached
}

// structuralReachability follows strict transitions from the entry points,
// ignoring prerequisites: the bounded fallback for large contracts.
func structuralReachability(c domain.Contract, terminal map[string]bool) map[string]bool {
	adj := map[string][]string{}
	for _, t := range c.Transitions {
		adj[t.From] = append(adj[t.From], t.To...)
	}
	queue := append([]string(nil), c.EntryPoints...)
	reached := map[string]bool{}
	for head := 0; head < len(queue); head++ {
		id := queue[head]
		if reached[id] {
			continue
		}
		reached[id] = true
		if !terminal[id] {
			queue = append(queue, adj[id]...)
		}
	}
	return reached
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
