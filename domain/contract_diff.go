package domain

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// ChangeKind says how an item differs between two contract versions.
type ChangeKind string

// Change kinds, in the order a reader wants them.
const (
	ChangeAdded   ChangeKind = "added"
	ChangeRemoved ChangeKind = "removed"
	ChangeChanged ChangeKind = "changed"
)

// ContractChange is one step, transition or rule that differs. Name is the
// step name, "from → to" for a transition, and "step: rule" for a rule;
// Details say what changed (empty for added and removed items).
type ContractChange struct {
	Kind    ChangeKind
	Name    string
	Details []string
}

// ContractDiff is what changed from contract version From to version To,
// each list sorted by name.
type ContractDiff struct {
	Name        string
	From, To    int
	Steps       []ContractChange
	Transitions []ContractChange
	Rules       []ContractChange
	// Contract-wide fields (parties, entry points, terminal steps, limits).
	Settings []ContractChange
}

// Empty reports whether the two versions define the same process.
func (d ContractDiff) Empty() bool {
	return len(d.Steps)+len(d.Transitions)+len(d.Rules)+len(d.Settings) == 0
}

// DiffContracts compares two compiled contract versions (normally of the
// same contract): a pure function of the two values, so both the web UI
// and API clients see the same answer.
func DiffContracts(from, to Contract) ContractDiff {
	d := ContractDiff{Name: to.Name, From: from.Version, To: to.Version}
	d.Steps = diffNamed(stepMap(from), stepMap(to), diffStep)
	d.Transitions = diffNamed(edgeMap(from), edgeMap(to), diffTransition)
	d.Rules = diffNamed(ruleMap(from), ruleMap(to), func(a, b string) []string { return nil })
	d.Settings = diffSettings(from, to)
	return d
}

// diffNamed pairs items by name: only in b is added, only in a removed,
// in both with details changed.
func diffNamed[T any](a, b map[string]T, details func(x, y T) []string) []ContractChange {
	var out []ContractChange
	for name, x := range a {
		y, ok := b[name]
		if !ok {
			out = append(out, ContractChange{Kind: ChangeRemoved, Name: name})
			continue
		}
		if ds := details(x, y); len(ds) > 0 {
			out = append(out, ContractChange{Kind: ChangeChanged, Name: name, Details: ds})
		}
	}
	for name := range b {
		if _, ok := a[name]; !ok {
			out = append(out, ContractChange{Kind: ChangeAdded, Name: name})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func stepMap(c Contract) map[string]ContractStep {
	m := make(map[string]ContractStep, len(c.Steps))
	for _, s := range c.Steps {
		m[s.Name] = s
	}
	return m
}

// edgeTerms is one allowed order with its source's retry policy and timeout.
type edgeTerms struct {
	maxRetries int
	canRetry   bool
	timeout    string
}

func edgeMap(c Contract) map[string]edgeTerms {
	m := map[string]edgeTerms{}
	for _, t := range c.Transitions {
		for _, to := range t.To {
			m[t.From+" → "+to] = edgeTerms{t.MaxRetries, t.CanRetry, t.Timeout.String()}
		}
	}
	return m
}

// ruleMap keys every rule by its step and its full text, so an edited rule
// shows as one removed and one added: a rule has no identity of its own.
func ruleMap(c Contract) map[string]string {
	m := map[string]string{}
	for _, s := range c.Steps {
		for _, r := range s.ContentRules {
			m[s.Name+": "+contentRuleText(r)] = ""
		}
		for _, r := range s.SemanticRules {
			txt := fmt.Sprintf("%s asks %q", r.Field, r.Question)
			if r.MinProbability > 0 {
				txt += fmt.Sprintf(" (p ≥ %g)", r.MinProbability)
			}
			m[s.Name+": "+txt] = ""
		}
	}
	return m
}

func contentRuleText(r ContentRule) string {
	txt := r.Field + " " + string(r.Operator)
	switch {
	case r.Reference != nil:
		txt += " " + r.Reference.Step + "." + r.Reference.Field
	case len(r.Values) > 0:
		txt += " [" + strings.Join(r.Values, ", ") + "]"
	case r.Value != "":
		txt += " " + r.Value
	}
	return txt
}

func diffStep(a, b ContractStep) []string {
	var ds []string
	add := func(field string, x, y any) {
		if !reflect.DeepEqual(x, y) {
			ds = append(ds, fmt.Sprintf("%s: %v → %v", field, show(x), show(y)))
		}
	}
	add("owner", a.Owner, b.Owner)
	add("type", a.Type, b.Type)
	add("timeout", a.Timeout.String(), b.Timeout.String())
	add("required", sortedCopy(a.Required), sortedCopy(b.Required))
	add("optional", sortedCopy(a.Optional), sortedCopy(b.Optional))
	add("depends on", sortedCopy(a.DependsOn), sortedCopy(b.DependsOn))
	add("fresh depends on", sortedCopy(a.FreshDependsOn), sortedCopy(b.FreshDependsOn))
	return ds
}

func diffTransition(a, b edgeTerms) []string {
	var ds []string
	if a.canRetry != b.canRetry {
		ds = append(ds, fmt.Sprintf("can retry: %v → %v", a.canRetry, b.canRetry))
	}
	if a.maxRetries != b.maxRetries {
		ds = append(ds, fmt.Sprintf("max retries: %d → %d", a.maxRetries, b.maxRetries))
	}
	if a.timeout != b.timeout {
		ds = append(ds, fmt.Sprintf("timeout: %s → %s", a.timeout, b.timeout))
	}
	return ds
}

func diffSettings(a, b Contract) []ContractChange {
	var out []ContractChange
	add := func(field string, x, y any) {
		if !reflect.DeepEqual(x, y) {
			out = append(out, ContractChange{Kind: ChangeChanged, Name: field, Details: []string{fmt.Sprintf("%v → %v", show(x), show(y))}})
		}
	}
	add("parties", sortedCopy(a.Parties), sortedCopy(b.Parties))
	add("entry points", sortedCopy(a.EntryPoints), sortedCopy(b.EntryPoints))
	add("terminal steps", sortedCopy(a.TerminalSteps), sortedCopy(b.TerminalSteps))
	add("max duration", a.MaxDuration.String(), b.MaxDuration.String())
	add("free order", a.FreeOrder, b.FreeOrder)
	add("allow multiple terminals", a.AllowMultipleTerminals, b.AllowMultipleTerminals)
	add("threads lock to version", a.ThreadsLockToVersion, b.ThreadsLockToVersion)
	return out
}

func sortedCopy(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}

func show(v any) string {
	switch x := v.(type) {
	case []string:
		if len(x) == 0 {
			return "none"
		}
		return strings.Join(x, ", ")
	case string:
		if x == "" || x == "0s" {
			return "none"
		}
		return x
	}
	return fmt.Sprint(v)
}
