package domain

import (
	"sort"
	"strings"
	"time"
)

// DecisionRoles are the party roles a principal may ask decisions under on
// the thread: its live parties that may record steps (a decision query names
// no role, so every one of them counts; owner rules are judged against all
// of them). A principal with none is refused as a write would be: not a
// party, an expired grant, or observer access.
func (t *Thread) DecisionRoles(a Actor, now time.Time) ([]string, error) {
	mine := t.partiesOf(a.PrincipalID)
	var roles []string
	var refusal error
	for _, p := range mine {
		_, err := t.Authorize(Actor{PrincipalKind: a.PrincipalKind, PrincipalID: a.PrincipalID, Role: p.Role, Scoped: a.Scoped}, ActRecordStep, now)
		if err != nil {
			if refusal == nil {
				refusal = err
			}
			continue
		}
		if !contains(roles, p.Role) {
			roles = append(roles, p.Role)
		}
	}
	if len(roles) == 0 {
		if refusal == nil {
			_, refusal = t.Authorize(a, ActRecordStep, now)
		}
		return nil, refusal
	}
	sort.Strings(roles)
	return roles, nil
}

// NewDecisionThread is what decision queries know of a thread: its status
// and start, its recorded attempts oldest first (each step identity's
// latest), the caller's roles, the prerequisite successes grants consumed
// and, for references and semantic context, each step's latest successful
// context (its registered fields, c's projection).
func NewDecisionThread(t Thread, c Contract, roles []string, history []RecordedStep, contexts []map[string]string, grants []StepGrant) DecisionThread {
	d := DecisionThread{Status: t.Status, StartedAt: t.CreatedAt, History: history, Roles: roles,
		Consumed: map[string]map[string]bool{}, Snapshots: map[string]map[string]string{}}
	for i, h := range history {
		if !StepSucceeded(h.Status) || i >= len(contexts) {
			continue
		}
		ctx := contexts[i]
		if st, ok := c.Step(h.Name); ok {
			ctx, _ = ProjectContext(st, ctx)
		}
		d.Snapshots[h.Name] = ctx
	}
	for _, g := range grants {
		// Fresh prerequisites an invocation consumed stay consumed
		// whatever became of it (FreshConsumed).
		for _, id := range g.FreshConsumed {
			if d.Consumed[g.StepName] == nil {
				d.Consumed[g.StepName] = map[string]bool{}
			}
			d.Consumed[g.StepName][id] = true
		}
		if g.Consumed == "" || !consumed(grants, g.Consumed, history) {
			continue
		}
		if d.Consumed[g.StepName] == nil {
			d.Consumed[g.StepName] = map[string]bool{}
		}
		d.Consumed[g.StepName][g.Consumed] = true
	}
	return d
}

// Should reasons when the classifier cannot advise (the reference's).
const (
	ReasonNoSnapshot       = "validated context unavailable; action remains contract-eligible"
	ReasonClassifierFailed = "classifier unavailable; action remains contract-eligible"
)

// Bounds of what should's advice is asked on (the reference engine's).
const (
	MaxShouldSteps = 12
	MaxShouldRefs  = 32
)

// ShouldFactsView is what should's advice is asked on: the validated content
// of the thread's most recent distinct successful steps (at most 12, their
// registered fields, each within the semantic bounds: longer fields are
// left out) and its refs (at most 32, without the engine's threadify.* and
// otel_trace_id), in a stable order.
type ShouldFactsView struct {
	Steps []ShouldStepFacts `json:"successful_steps"`
	Refs  map[string]string `json:"refs"`
}

// ShouldStepFacts is one successful step's validated content.
type ShouldStepFacts struct {
	Step    string            `json:"step"`
	Content map[string]string `json:"content"`
}

// ShouldFacts builds ShouldFactsView from a decision snapshot and the
// thread's refs.
func ShouldFacts(t DecisionThread, refs map[string]string) ShouldFactsView {
	out := ShouldFactsView{Steps: []ShouldStepFacts{}, Refs: map[string]string{}}
	seen := map[string]bool{}
	for i := len(t.History) - 1; i >= 0 && len(out.Steps) < MaxShouldSteps; i-- {
		h := t.History[i]
		if !StepSucceeded(h.Status) || seen[h.Name] {
			continue
		}
		seen[h.Name] = true
		content := map[string]string{}
		for _, k := range sortedKeys(t.Snapshots[h.Name]) {
			v := t.Snapshots[h.Name][k]
			if len(content) >= MaxSemanticContextFields || len(k) > MaxSemanticContextFieldLen || len(v) > MaxSemanticContextValueLen {
				continue
			}
			content[k] = v
		}
		out.Steps = append(out.Steps, ShouldStepFacts{Step: h.Name, Content: content})
	}
	for _, k := range sortedKeys(refs) {
		if len(out.Refs) >= MaxShouldRefs {
			break
		}
		if strings.HasPrefix(k, "threadify.") || k == "otel_trace_id" {
			continue
		}
		out.Refs[k] = refs[k]
	}
	return out
}
