package domain

import (
	"fmt"
	"strings"
	"time"
)

// Run-time judging of the Gherkin clauses that go beyond a step's shape:
// content rules (refused before anything is written), fresh prerequisites
// (consumed by invocations), parallel groups.

// Issue types and rules of the clauses judged here.
const (
	// IssueFreshDependencyRequired: an unguarded report of a step whose
	// fresh prerequisite ("must succeed before each invocation") has not
	// succeeded again since an earlier invocation consumed it (critical).
	IssueFreshDependencyRequired = ReplayFreshRequired
	// IssueGroupDurationExceeded: the members of a parallel group took
	// longer, from the first start to the last finish, than its combined
	// duration (major).
	IssueGroupDurationExceeded = "group_duration_exceeded"

	// RuleGroupCombinedDuration names the group duration rule.
	RuleGroupCombinedDuration = "groups.max_combined_duration"
)

// ReportInvocationPrefix starts the invocation id of the grant row an
// unguarded report writes to keep what it consumed ("report:" + step id):
// no SDK sends such an id (they are UUIDs or caller strings without it), and
// PermitStep never hands it out.
const ReportInvocationPrefix = "report:"

// JudgeContent refuses a submission that breaks its step's content rules:
// the content_rule_failed error names the field and the rule (every
// violation in Details["violations"]); nil when the step has no content
// rule broken. Only rules the contract states about values refuse here: a
// field the step merely requires ("Required context", "must be present")
// stays the recorded missing_required_field violation it always was, so
// YAML contracts judge exactly as before. Semantic questions are left to a
// classifier (CheckStepContent lists them).
func JudgeContent(step ContractStep, status StepStatus, ctx map[string]string, snapshots map[string]map[string]string) error {
	if len(step.ContentRules) == 0 {
		return nil
	}
	res := CheckStepContent(step, ContentCheck{Status: status, Context: ctx, Snapshots: snapshots})
	ruled := map[string]bool{}
	for _, r := range step.ContentRules {
		ruled[r.Field] = true
	}
	kept := res.Violations[:0:0]
	for _, v := range res.Violations {
		if v.Rule != "semantic" && ruled[v.Field] {
			kept = append(kept, v)
		}
	}
	return ContentResult{Violations: kept}.Err(step.Name)
}

// LatestSuccessContexts returns, for each of names, the context of its
// latest success in history-ordered states (the snapshots content
// references read). Every recorded success passed its content rules (a
// breaking one is refused, never recorded), so the latest recorded success
// is the latest validated one.
func LatestSuccessContexts(names []string, steps []RecordedStep, contexts map[string]map[string]string) map[string]map[string]string {
	if len(names) == 0 {
		return nil
	}
	out := map[string]map[string]string{}
	for i := len(steps) - 1; i >= 0; i-- {
		s := steps[i]
		if !StepSucceeded(s.Status) || !contains(names, s.Name) {
			continue
		}
		if _, done := out[s.Name]; done {
			continue
		}
		ctx := contexts[s.ID]
		if ctx == nil {
			ctx = map[string]string{}
		}
		out[s.Name] = ctx
	}
	return out
}

// FreshConsumed is the set of prerequisite successes earlier invocations of
// step consumed: every grant of the step (guarded by waitFor, or the one an
// unguarded report wrote) keeps what it consumed whatever became of it —
// cancelled, failed or abandoned, a consumed approval is never restored.
func FreshConsumed(grants []StepGrant, step string) map[string]bool {
	out := map[string]bool{}
	for _, g := range grants {
		if g.StepName != step {
			continue
		}
		for _, id := range g.FreshConsumed {
			out[id] = true
		}
	}
	return out
}

// judgeFresh checks an unguarded report of step (no allowed waitFor grant)
// against its fresh prerequisites. It returns the issue when one is stale and
// the grant row that records what the report consumes (nil when nothing).
func judgeFresh(step ContractStep, history []RecordedStep, consumed map[string]bool, who string, now time.Time) (*ValidationIssue, *StepGrant) {
	if len(step.FreshDependsOn) == 0 {
		return nil, nil
	}
	pc := CheckPrerequisites(step, history, consumed)
	if len(pc.Stale) > 0 {
		return &ValidationIssue{Type: IssueFreshDependencyRequired, Severity: SeverityCritical, Rule: RuleFreshDependsOn,
			Field: "stepName", Expected: strings.Join(step.FreshDependsOn, ", "), Actual: strings.Join(pc.Stale, ", "),
			Message: fmt.Sprintf("Step '%s' requires a new success of %s before each invocation; the latest one was already used",
				step.Name, strings.Join(pc.Stale, ", "))}, nil
	}
	if len(pc.Consume) == 0 {
		return nil, nil // a prerequisite is missing: missing_dependency says so
	}
	return nil, &StepGrant{StepName: step.Name, PrincipalID: who, Status: GrantAllowed, FreshConsumed: pc.Consume, GrantedAt: now}
}

// groupsOf lists the groups step belongs to.
func (c Contract) groupsOf(step string) []ContractGroup {
	var out []ContractGroup
	for _, g := range c.Groups {
		if contains(g.Steps, step) {
			out = append(out, g)
		}
	}
	return out
}

// sameGroup reports whether steps a and b are members of one group.
func (c Contract) sameGroup(a, b string) bool {
	for _, g := range c.groupsOf(a) {
		if contains(g.Steps, b) {
			return true
		}
	}
	return false
}

// GroupsPending lists the members, other than step, of the groups whose
// members must all succeed ("all parallel steps must succeed") and that
// have not succeeded in history: a terminal member completes the thread
// only once every member of its groups has.
func (c Contract) GroupsPending(step string, history []RecordedStep) []string {
	var out []string
	for _, g := range c.groupsOf(step) {
		if !g.AllMustSucceed {
			continue
		}
		for _, m := range g.Steps {
			if m == step || contains(out, m) {
				continue
			}
			if _, ok := succeededAt(history, m); !ok {
				out = append(out, m)
			}
		}
	}
	return out
}

// groupDurationIssues judges the combined duration of each group s
// completes (s succeeds and every other member has): from the earliest start
// to the latest finish of the members' latest successes (a member without
// start or finish times counts from when it was recorded).
func groupDurationIssues(c Contract, steps []RecordedStep, s StepInput, now time.Time) []ValidationIssue {
	if !StepSucceeded(s.Status) {
		return nil
	}
	var out []ValidationIssue
	for _, g := range c.groupsOf(s.Name) {
		if g.MaxCombinedDuration <= 0 {
			continue
		}
		first, last := orNow(s.StartedAt, now), orNow(s.FinishedAt, now)
		complete := true
		for _, m := range g.Steps {
			if m == s.Name {
				continue
			}
			r, ok := latestSuccessOf(steps, m)
			if !ok {
				complete = false
				break
			}
			if st := orNow(r.StartedAt, r.RecordedAt); st.Before(first) {
				first = st
			}
			if fin := orNow(r.FinishedAt, r.RecordedAt); fin.After(last) {
				last = fin
			}
		}
		if !complete {
			continue
		}
		if took := last.Sub(first); took > g.MaxCombinedDuration {
			out = append(out, ValidationIssue{Type: IssueGroupDurationExceeded, Severity: SeverityMajor, Rule: RuleGroupCombinedDuration,
				Field: "groups." + g.Name, Expected: g.MaxCombinedDuration.String(), Actual: roundDur(took).String(),
				Message: fmt.Sprintf("Parallel group %q took %s, longer than its combined duration of %s", g.Name, roundDur(took), g.MaxCombinedDuration)})
		}
	}
	return out
}

// transitionSource is the latest success that is not a member of one of
// name's groups: what a group member's transition is judged from.
func transitionSource(c Contract, steps []RecordedStep, name string) (string, bool) {
	for i := len(steps) - 1; i >= 0; i-- {
		if StepSucceeded(steps[i].Status) && !c.sameGroup(steps[i].Name, name) {
			return steps[i].Name, true
		}
	}
	return "", false
}

func latestSuccessOf(steps []RecordedStep, name string) (RecordedStep, bool) {
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].Name == name && StepSucceeded(steps[i].Status) {
			return steps[i], true
		}
	}
	return RecordedStep{}, false
}

func orNow(t, now time.Time) time.Time {
	if t.IsZero() {
		return now
	}
	return t
}
