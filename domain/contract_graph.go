package domain

import (
	"sort"
	"time"
)

// Graph node types.
const (
	GraphNodeStep  = "step"
	GraphNodeGroup = "parallel_group"
)

// ContractGraph is a contract as nodes and edges: what a preview shows and
// what decisions walk.
type ContractGraph struct {
	Nodes         []GraphNode `json:"nodes"`
	EntryPoints   []string    `json:"entry_points"`
	TerminalSteps []string    `json:"terminal_steps"`
	// Transitions are the strict next-step rules only.
	Transitions []Transition `json:"transitions"`
}

// GraphNode is a step or a parallel group.
type GraphNode struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	Owner       string `json:"owner,omitempty"`
	Description string `json:"description,omitempty"`
	StepType    string `json:"step_type,omitempty"`
	// Next is the topology: the steps a strict transition leads to and the
	// steps that depend on this one, sorted.
	Next           []string      `json:"next"`
	DependsOn      []string      `json:"depends_on,omitempty"`
	FreshDependsOn []string      `json:"fresh_depends_on,omitempty"`
	Timeout        time.Duration `json:"timeout,omitempty"`
	Entry          bool          `json:"entry,omitempty"`
	Terminal       bool          `json:"terminal,omitempty"`
	// Group is the parallel group the step belongs to (its first one).
	Group string `json:"group,omitempty"`
	// Steps, Mode (all_of | any_of) and MaxDuration describe a group node.
	Steps       []string      `json:"steps,omitempty"`
	Mode        string        `json:"mode,omitempty"`
	MaxDuration time.Duration `json:"max_duration,omitempty"`
}

// Topology maps each step to the steps that may follow it: strict
// transitions and dependency edges (a prerequisite leads to the steps that
// need it), each list sorted and without repeats.
func (c Contract) Topology() map[string][]string {
	next := make(map[string][]string, len(c.Steps))
	add := func(from, to string) {
		if !contains(next[from], to) {
			next[from] = append(next[from], to)
		}
	}
	for _, t := range c.Transitions {
		for _, to := range t.To {
			add(t.From, to)
		}
	}
	for _, s := range c.Steps {
		for _, d := range s.DependsOn {
			add(d, s.Name)
		}
	}
	for k := range next {
		sort.Strings(next[k])
	}
	return next
}

// DeriveEndpoints returns the entry points (steps no edge of the topology
// leads to) and terminal steps (steps with no edge out), in step order: the
// lists a contract without explicit entry or terminal clauses uses.
func (c Contract) DeriveEndpoints() (entries, terminals []string) {
	next := c.Topology()
	incoming := map[string]bool{}
	for _, tos := range next {
		for _, to := range tos {
			incoming[to] = true
		}
	}
	for _, s := range c.Steps {
		if !incoming[s.Name] {
			entries = append(entries, s.Name)
		}
		if len(next[s.Name]) == 0 {
			terminals = append(terminals, s.Name)
		}
	}
	return entries, terminals
}

// Graph builds c's graph: its steps in contract order, then its groups.
func (c Contract) Graph() ContractGraph {
	next := c.Topology()
	g := ContractGraph{EntryPoints: nonNilStrings(c.EntryPoints), TerminalSteps: nonNilStrings(c.TerminalSteps),
		Transitions: c.Transitions, Nodes: make([]GraphNode, 0, len(c.Steps)+len(c.Groups))}
	if g.Transitions == nil {
		g.Transitions = []Transition{}
	}
	groupOf := map[string]string{}
	for _, gr := range c.Groups {
		for _, s := range gr.Steps {
			if _, ok := groupOf[s]; !ok {
				groupOf[s] = gr.Name
			}
		}
	}
	for _, s := range c.Steps {
		g.Nodes = append(g.Nodes, GraphNode{ID: s.Name, Type: GraphNodeStep, Owner: s.Owner, Description: s.Description,
			StepType: s.Type, Next: nonNilStrings(next[s.Name]), DependsOn: s.DependsOn, FreshDependsOn: s.FreshDependsOn,
			Timeout: s.Timeout, Entry: c.IsEntryPoint(s.Name), Terminal: c.IsTerminal(s.Name), Group: groupOf[s.Name]})
	}
	for _, gr := range c.Groups {
		mode := "any_of"
		if gr.AllMustSucceed {
			mode = "all_of"
		}
		g.Nodes = append(g.Nodes, GraphNode{ID: gr.Name, Type: GraphNodeGroup, Next: []string{}, Steps: gr.Steps,
			Mode: mode, MaxDuration: gr.MaxCombinedDuration})
	}
	return g
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
