package domain

import (
	"fmt"
	"strings"
	"time"
)

// Replay judges a thread's recorded steps again, in record order, as if
// another contract (a draft) had been in force when they were submitted:
// what that contract would have refused (content rules: the step would not
// have been recorded), which rules it would have found broken (the issues
// ValidateStep and the fresh-prerequisite check report) and where the
// thread would have ended. It only reads what was recorded; it asks no
// classifier.

// ReplayOutcome is what a draft does to one step.
type ReplayOutcome string

const (
	// ReplayRefused: the step would not have been recorded: its content
	// breaks a content rule (content_rule_failed), or the thread would
	// already have completed (thread_closed).
	ReplayRefused ReplayOutcome = "refused"
	// ReplayViolated: a critical or major issue; the thread would have
	// failed.
	ReplayViolated ReplayOutcome = "violated"
	// ReplayWarned: minor or warning issues only.
	ReplayWarned ReplayOutcome = "warning"
)

// Finding types replay reports beside ValidateStep's issue types.
const (
	// ReplayContentRuleFailed is a content-rule refusal (the error code a
	// refused step gets).
	ReplayContentRuleFailed = string(CodeContentRuleFailed)
	// ReplayThreadClosed: the draft would have completed the thread
	// earlier, so later steps would have been refused as thread_closed.
	ReplayThreadClosed = string(CodeThreadClosed)
	// ReplayFreshRequired: a fresh prerequisite ("must succeed before each
	// invocation") whose latest success an earlier invocation consumed.
	ReplayFreshRequired = "fresh_dependency_required"
	// RuleFreshDependsOn names the fresh-prerequisite rule.
	RuleFreshDependsOn = "fresh_depends_on"
)

// ReplayStep is one recorded step attempt, as replay reads it.
type ReplayStep struct {
	ID             string
	Name           string
	IdempotencyKey string
	Status         string
	Context        map[string]string
	// StartedAt and FinishedAt are the times the SDK reported (zero when it
	// did not); RecordedAt is when the engine recorded the attempt, the
	// "now" it is judged at.
	StartedAt  time.Time
	FinishedAt time.Time
	RecordedAt time.Time
	// Roles are the parties the step's writer holds on the thread. Which
	// one its connection used is not recorded: the owner of the step under
	// the draft when the writer holds it, else the first.
	Roles []string
}

// ReplayInput is one recorded thread.
type ReplayInput struct {
	StartedAt time.Time
	Steps     []ReplayStep
}

// ReplayFinding is one rule a draft applies to a thread: refused, broken,
// or warned about, on one step and field.
type ReplayFinding struct {
	Outcome ReplayOutcome `json:"outcome"`
	// Type is a validation issue type (invalid_transition,
	// missing_required_field, …), content_rule_failed,
	// fresh_dependency_required or thread_closed.
	Type string `json:"type"`
	// Rule is the issue's rule (owner, transitions, …), or for a content
	// refusal the operator ("gt", "one_of", "required", "semantic").
	Rule  string `json:"rule,omitempty"`
	Step  string `json:"step"`
	Field string `json:"field,omitempty"`
	// Message is the first occurrence's message.
	Message string `json:"message"`
	// Steps counts the thread's steps it concerned.
	Steps int `json:"steps"`
}

// ReplayKey identifies a finding across threads.
type ReplayKey struct {
	Outcome                 ReplayOutcome
	Type, Rule, Step, Field string
}

// Key is the finding's identity.
func (f ReplayFinding) Key() ReplayKey {
	return ReplayKey{Outcome: f.Outcome, Type: f.Type, Rule: f.Rule, Step: f.Step, Field: f.Field}
}

// ReplayVerdict is what a draft makes of one thread.
type ReplayVerdict struct {
	// Findings in order of first occurrence, one per key.
	Findings []ReplayFinding
	// Judged counts the steps judged; StepsRefused those the draft would
	// not have recorded.
	Judged, StepsRefused int
	// Ended is how the thread would have ended under the draft (completed
	// or failed), "" when it would have stayed open; EndedAt is the index
	// of that step.
	Ended   ThreadStatus
	EndedAt int
	// SemanticUnjudged counts steps whose semantic questions were not put
	// to a classifier.
	SemanticUnjudged int
}

// Has reports whether any finding has outcome o.
func (v ReplayVerdict) Has(o ReplayOutcome) bool {
	for _, f := range v.Findings {
		if f.Outcome == o {
			return true
		}
	}
	return false
}

// Passes reports whether the draft would neither refuse a step of the
// thread nor fail it.
func (v ReplayVerdict) Passes() bool { return !v.Has(ReplayRefused) && !v.Has(ReplayViolated) }

type replayState struct {
	c        Contract
	v        ReplayVerdict
	index    map[ReplayKey]int
	history  []RecordedStep
	attempts map[string]int               // accepted attempts per step identity
	done     map[string]bool              // identities that succeeded
	snaps    map[string]map[string]string // latest accepted success's registered context, by step
	consumed map[string]map[string]bool   // fresh prerequisite successes spent, by step
}

func (st *replayState) add(f ReplayFinding) {
	k := f.Key()
	if i, ok := st.index[k]; ok {
		st.v.Findings[i].Steps++
		return
	}
	f.Steps = 1
	st.index[k] = len(st.v.Findings)
	st.v.Findings = append(st.v.Findings, f)
}

// ReplayThread judges t's steps, in order, under c. Per step, as the
// engine does at submission: a step of c with content or semantic rules is
// first judged on its content (CheckStepContent, with the registered context of the latest accepted
// success of each referenced step); a refused step is not recorded, so the
// steps after it are judged without it. An accepted step is judged by
// ValidateStep at its recorded time, with the attempts accepted before it
// as the thread's history and the attempt number they give it, and by
// CheckPrerequisites for fresh prerequisites (each accepted invocation
// spends the successes it consumes). A critical issue, or a major one on a
// terminal success, fails the thread there; a terminal success without
// either completes it. Either way the later recorded steps would have been
// refused (thread_closed): after a completion each is reported, after a
// failure they add nothing (the violation says why).
func ReplayThread(c Contract, t ReplayInput) ReplayVerdict {
	st := &replayState{c: c, index: map[ReplayKey]int{}, attempts: map[string]int{}, done: map[string]bool{},
		snaps: map[string]map[string]string{}, consumed: map[string]map[string]bool{}}
	st.v.EndedAt = -1
	for i, s := range t.Steps {
		if st.v.Ended != "" {
			if st.v.Ended == ThreadCompleted {
				st.v.StepsRefused++
				at := t.Steps[st.v.EndedAt].Name
				st.add(ReplayFinding{Outcome: ReplayRefused, Type: ReplayThreadClosed, Step: s.Name,
					Message: fmt.Sprintf("the thread would have completed at step %q, so step %q would have been refused (thread_closed)", at, s.Name)})
			}
			continue
		}
		st.v.Judged++
		st.step(i, s, t.StartedAt)
	}
	return st.v
}

func (st *replayState) step(i int, s ReplayStep, startedAt time.Time) {
	c := st.c
	step, known := c.Step(s.Name)
	status := StepStatus(s.Status)
	registered := s.Context
	if known && judgesContent(step) {
		res := CheckStepContent(step, ContentCheck{Status: status, Context: s.Context, Snapshots: st.snapshots(step)})
		if !res.OK() {
			st.v.StepsRefused++
			for _, v := range res.Violations {
				st.add(ReplayFinding{Outcome: ReplayRefused, Type: ReplayContentRuleFailed, Rule: v.Rule, Step: s.Name,
					Field: v.Field, Message: "Step validation failed: " + v.Message})
			}
			return
		}
		if len(res.Semantic) > 0 {
			st.v.SemanticUnjudged++
		}
		registered = res.Registered
	}
	id := s.Name + "\x00" + s.IdempotencyKey
	if st.done[id] {
		return // a duplicate of a success: not recorded again
	}
	party := replayParty(step, s.Roles)
	attempt := st.attempts[id] + 1
	in := StepInput{Name: s.Name, Status: s.Status, Context: s.Context, StartedAt: s.StartedAt, FinishedAt: s.FinishedAt,
		Attempt: attempt, Party: party}
	vr := ValidateStep(c, ThreadSnapshot{StartedAt: startedAt, Steps: st.history, Role: party}, in, s.RecordedAt)
	issues := vr.Issues
	if known && len(step.FreshDependsOn) > 0 {
		pc := CheckPrerequisites(step, st.history, st.consumed[s.Name])
		if len(pc.Stale) > 0 {
			issues = append(issues, ValidationIssue{Type: ReplayFreshRequired, Severity: SeverityCritical, Rule: RuleFreshDependsOn,
				Field: "stepName", Message: fmt.Sprintf("Step '%s' needs a new success of %s since its previous invocation",
					s.Name, strings.Join(pc.Stale, ","))})
		}
		if st.consumed[s.Name] == nil {
			st.consumed[s.Name] = map[string]bool{}
		}
		for _, id := range pc.Consume {
			st.consumed[s.Name][id] = true
		}
		vr = NewValidationResult(issues)
	}
	for _, is := range vr.Issues {
		out := ReplayWarned
		switch is.Severity {
		case SeverityCritical, SeverityMajor:
			out = ReplayViolated
		case SeverityInfo:
			continue
		}
		st.add(ReplayFinding{Outcome: out, Type: is.Type, Rule: is.Rule, Step: s.Name, Field: is.Field, Message: is.Message})
	}
	st.history = append(st.history, RecordedStep{ID: s.ID, Name: s.Name, Status: s.Status, RecordedAt: s.RecordedAt, Attempt: attempt})
	st.attempts[id] = attempt
	if StepSucceeded(s.Status) {
		st.done[id] = true
		if known {
			st.snaps[s.Name] = registered
		}
	}
	switch {
	case hasSeverity(vr, SeverityCritical) || vr.FailsThread() && c.IsTerminal(s.Name) && status.Succeeded():
		st.v.Ended, st.v.EndedAt = ThreadFailed, i
	case vr.CompletesThread(c, in):
		st.v.Ended, st.v.EndedAt = ThreadCompleted, i
	}
}

// judgesContent reports whether a step's submissions are judged on their
// content: steps with content or semantic rules. Others (every YAML step)
// keep their required fields a recorded issue (missing_required_field), as
// ValidateStep reports it, rather than a refusal.
func judgesContent(step ContractStep) bool { return len(step.ContentRules)+len(step.SemanticRules) > 0 }

// snapshots are the contexts step's content references read.
func (st *replayState) snapshots(step ContractStep) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, name := range step.ReferencedSteps() {
		if snap, ok := st.snaps[name]; ok {
			out[name] = snap
		}
	}
	return out
}

// replayParty is the party a step is judged as: the step's owner when the
// writer holds that role on the thread, else its first role ("" when none
// is known, which skips the owner check as it does at run time).
func replayParty(step ContractStep, roles []string) string {
	if len(roles) == 0 {
		return ""
	}
	if step.Owner != "" && contains(roles, step.Owner) {
		return step.Owner
	}
	return roles[0]
}
