package domain

import (
	"fmt"
	"strings"
	"time"
)

// Severity grades a validation issue.
//
//	critical, major  the thread fails (counted in CriticalCount, status violated)
//	minor, warning   execution continues (status warning)
//	info             logged only (status stays passed)
type Severity string

const (
	SeverityCritical Severity = "critical"
	SeverityMajor    Severity = "major"
	SeverityMinor    Severity = "minor"
	SeverityWarning  Severity = "warning"
	SeverityInfo     Severity = "info"
)

// Severities lists every severity, strongest first.
var Severities = []Severity{SeverityCritical, SeverityMajor, SeverityMinor, SeverityWarning, SeverityInfo}

// ParseSeverity accepts exactly the documented severity names.
func ParseSeverity(s string) (Severity, error) {
	switch sev := Severity(s); sev {
	case SeverityCritical, SeverityMajor, SeverityMinor, SeverityWarning, SeverityInfo:
		return sev, nil
	}
	return "", Invalid("severity", "unknown severity %q: must be one of critical, major, minor, warning, info", s)
}

// FailsThread reports whether an issue of this severity fails the thread.
func (s Severity) FailsThread() bool { return s == SeverityCritical || s == SeverityMajor }

// Validation issue types. The names are the ones SDKs and the reference engine
// use, so clients can match on them.
const (
	IssueInvalidEntryPoint      = "invalid_entry_point"
	IssueInvalidTransition      = "invalid_transition"
	IssueUnauthorizedOwner      = "unauthorized_owner"
	IssueMissingRequiredField   = "missing_required_field"
	IssueMissingOptionalField   = "missing_optional_field"
	IssueExtraUndocumentedField = "extra_undocumented_field"
	IssueRetryLimitExceeded     = "retry_limit_exceeded"
	IssueRetryAttempted         = "retry_attempted"
	IssueStepTimeoutExceeded    = "step_timeout_exceeded"
	IssueMaxDurationExceeded    = "max_duration_exceeded"
	IssueMultipleTerminalStates = "multiple_terminal_states"
	IssueMissingDependency      = "missing_dependency"
)

// Rule names say which contract rule an issue comes from; an undocumented step
// is reported as invalid_transition with RuleUndocumentedStep.
const (
	RuleEntryPoints       = "entry_points"
	RuleTransitions       = "transitions"
	RuleUndocumentedStep  = "undocumented_step"
	RuleOwner             = "owner"
	RuleRequiredContext   = "business_context.required"
	RuleOptionalContext   = "business_context.optional"
	RuleDocumentedContext = "business_context"
	RuleMaxRetries        = "max_retries"
	RuleTimeout           = "timeout"
	RuleTransitionTimeout = "transition_timeout"
	RuleMaxDuration       = "max_duration"
	RuleTerminalSteps     = "terminal_steps"
	RuleDependsOn         = "depends_on"
)

// Overall validation outcomes of one step.
const (
	ValidationPassed   = "passed"
	ValidationWarning  = "warning"
	ValidationViolated = "violated"
)

// ValidationIssue is one rule a step broke (or, for info, a remark).
type ValidationIssue struct {
	Type     string   `json:"type"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	Field    string   `json:"field,omitempty"`
	Expected string   `json:"expected,omitempty"`
	Actual   string   `json:"actual,omitempty"`
	Rule     string   `json:"rule,omitempty"`
}

// ValidationResult is the outcome of validating one step against a contract.
//
// Counts: CriticalCount counts critical AND major issues (both fail the
// thread), WarningCount counts warning issues, MinorCount minor ones and
// InfoCount info ones. OverallStatus is violated when CriticalCount > 0,
// warning when there is any minor or warning issue, passed otherwise (info
// issues never change it).
type ValidationResult struct {
	Issues        []ValidationIssue `json:"issues"`
	OverallStatus string            `json:"overall_status"`
	CriticalCount int               `json:"critical_count"`
	WarningCount  int               `json:"warning_count"`
	MinorCount    int               `json:"minor_count"`
	InfoCount     int               `json:"info_count"`
	HasCritical   bool              `json:"has_critical"`
}

// RecordedStep is one attempt already recorded on the thread.
type RecordedStep struct {
	// ID is the recorded attempt's id (a waitFor grant consumes a success
	// by it); "" when unknown.
	ID         string
	Name       string
	Status     string
	RecordedAt time.Time
	Attempt    int
	// StartedAt and FinishedAt are the times the writer reported (zero
	// when it did not): group durations are judged on them.
	StartedAt  time.Time
	FinishedAt time.Time
}

// ThreadSnapshot is what validation needs to know about the thread so far.
type ThreadSnapshot struct {
	StartedAt time.Time
	// Steps are the recorded attempts in record order, failed ones included.
	Steps []RecordedStep
	// Role is the party writing; StepInput.Party wins when both are set.
	Role string
}

// StepInput is the step attempt being recorded.
type StepInput struct {
	Name       string
	Status     string
	Context    map[string]string
	StartedAt  time.Time
	FinishedAt time.Time
	Attempt    int // 1 for the first attempt, 2 for the first retry, ...
	Party      string
}

// StepSucceeded reports whether a step status counts as success. SDKs send
// "success"; the engine's internal step state says "completed".
func StepSucceeded(status string) bool { return status == "success" || status == "completed" }

// StepFailed reports whether a step status is a failure.
func StepFailed(status string) bool { return status == "failed" || status == "error" }

// NewValidationResult computes the counts and overall status of issues.
func NewValidationResult(issues []ValidationIssue) ValidationResult {
	r := ValidationResult{Issues: issues, OverallStatus: ValidationPassed}
	if r.Issues == nil {
		r.Issues = []ValidationIssue{}
	}
	for _, is := range r.Issues {
		switch is.Severity {
		case SeverityCritical, SeverityMajor:
			r.CriticalCount++
		case SeverityWarning:
			r.WarningCount++
		case SeverityMinor:
			r.MinorCount++
		default:
			r.InfoCount++
		}
	}
	r.HasCritical = r.CriticalCount > 0
	switch {
	case r.HasCritical:
		r.OverallStatus = ValidationViolated
	case r.WarningCount+r.MinorCount > 0:
		r.OverallStatus = ValidationWarning
	}
	return r
}

// ValidateStep checks one step attempt against contract c, given the thread so
// far and the current time. It never rejects the step: the caller records the
// attempt whatever the result and stores the issues beside it.
//
// Rules, in order:
//   - an undocumented step gives invalid_transition (critical, rule
//     undocumented_step) and no other per-step checks, since there is nothing
//     to check it against;
//   - with no successful step yet, the step must be an entry point
//     (invalid_entry_point, critical); otherwise it must be allowed after the
//     latest successful step (invalid_transition, critical), unless the
//     contract has no transition rules (FreeOrder, Gherkin); a member of a
//     parallel group is judged from the latest success outside its group;
//   - every prerequisite (DependsOn) must have succeeded before
//     (missing_dependency, critical);
//   - the writing party must own the step (unauthorized_owner, critical) when
//     both are known;
//   - required context keys must be present (missing_required_field, major),
//     except on failed attempts, which did not produce their outputs;
//     absent optional keys and keys the step does not document are info, the
//     latter only for steps that document some context ("private_<k>" counts
//     as documented when k is);
//   - attempt > 1 is a retry (retry_attempted, minor); over the transition's
//     max_retries, or with can_retry false, it is retry_limit_exceeded (major);
//   - finishedAt - startedAt over the step timeout: step_timeout_exceeded
//     (major); the step after a transition with a timeout recorded later than
//     that after the transition's source succeeded: step_timeout_exceeded
//     (major, rule transition_timeout); now - thread start over max_duration: max_duration_exceeded
//     (major);
//   - a terminal step succeeding after another terminal step already did:
//     multiple_terminal_states with the contract's severity (default minor),
//     unless the contract allows multiple terminals or both are members of
//     one parallel group;
//   - the success that completes a parallel group (every other member has
//     succeeded) over the group's combined duration, from the first
//     member's start to the last one's finish: group_duration_exceeded
//     (major).
func ValidateStep(c Contract, t ThreadSnapshot, s StepInput, now time.Time) ValidationResult {
	var issues []ValidationIssue
	add := func(is ValidationIssue) { issues = append(issues, is) }

	if d := c.MaxDuration; d > 0 && !t.StartedAt.IsZero() {
		if elapsed := now.Sub(t.StartedAt); elapsed > d {
			add(ValidationIssue{
				Type: IssueMaxDurationExceeded, Severity: SeverityMajor, Rule: RuleMaxDuration,
				Message:  fmt.Sprintf("Thread has run for %s, longer than the contract's max_duration of %s", roundDur(elapsed), d),
				Expected: d.String(), Actual: roundDur(elapsed).String(),
			})
		}
	}

	step, known := c.Step(s.Name)
	if !known {
		add(ValidationIssue{
			Type: IssueInvalidTransition, Severity: SeverityCritical, Rule: RuleUndocumentedStep, Field: "stepName",
			Message:  fmt.Sprintf("Step %q is not defined in contract %s", s.Name, c.Ref()),
			Expected: strings.Join(stepNames(c), ", "), Actual: s.Name,
		})
		return NewValidationResult(issues)
	}

	prev, hasPrev := lastSucceeded(t.Steps)
	if tr, ok := c.Transition(prev); hasPrev && ok && tr.Timeout > 0 {
		if at, ok := succeededAt(t.Steps, prev); ok && now.Sub(at) > tr.Timeout {
			add(ValidationIssue{
				Type: IssueStepTimeoutExceeded, Severity: SeverityMajor, Rule: RuleTransitionTimeout, Field: "stepName",
				Message:  fmt.Sprintf("Step %q came %s after %q, longer than the transition's timeout of %s", s.Name, roundDur(now.Sub(at)), prev, tr.Timeout),
				Expected: tr.Timeout.String(), Actual: roundDur(now.Sub(at)).String(),
			})
		}
	}
	// Members of a parallel group run side by side: one follows another
	// member as it follows what came before the group.
	if hasPrev && c.sameGroup(prev, s.Name) {
		prev, hasPrev = transitionSource(c, t.Steps, s.Name)
	}
	switch {
	case !hasPrev && !c.IsEntryPoint(s.Name):
		add(ValidationIssue{
			Type: IssueInvalidEntryPoint, Severity: SeverityCritical, Rule: RuleEntryPoints, Field: "stepName",
			Message:  fmt.Sprintf("Step %q cannot start a thread; entry points are: %s", s.Name, strings.Join(c.EntryPoints, ", ")),
			Expected: strings.Join(c.EntryPoints, ", "), Actual: s.Name,
		})
	case hasPrev && !c.FreeOrder && !contains(c.AllowedNext(prev), s.Name):
		allowed := c.AllowedNext(prev)
		msg := fmt.Sprintf("Invalid transition from %q to %q; allowed next steps: %s", prev, s.Name, strings.Join(allowed, ", "))
		if len(allowed) == 0 {
			msg = fmt.Sprintf("Invalid transition from %q to %q; %q has no outgoing transitions", prev, s.Name, prev)
		}
		add(ValidationIssue{
			Type: IssueInvalidTransition, Severity: SeverityCritical, Rule: RuleTransitions, Field: "stepName",
			Message: msg, Expected: strings.Join(allowed, ", "), Actual: prev + " -> " + s.Name,
		})
	}

	if missing := missingDependencies(step, t.Steps); len(missing) > 0 {
		add(ValidationIssue{
			Type: IssueMissingDependency, Severity: SeverityCritical, Rule: RuleDependsOn, Field: "stepName",
			Message:  fmt.Sprintf("Step '%s' is missing required prior steps: %s", s.Name, strings.Join(missing, ",")),
			Expected: strings.Join(step.DependsOn, ", "), Actual: strings.Join(missing, ", "),
		})
	}

	party := s.Party
	if party == "" {
		party = t.Role
	}
	if step.Owner != "" && party != "" && party != step.Owner {
		add(ValidationIssue{
			Type: IssueUnauthorizedOwner, Severity: SeverityCritical, Rule: RuleOwner, Field: "role",
			Message:  fmt.Sprintf("Step %q is owned by %q, but %q recorded it", s.Name, step.Owner, party),
			Expected: step.Owner, Actual: party,
		})
	}

	if !StepFailed(s.Status) {
		for _, k := range step.Required {
			if _, ok := s.Context[k]; !ok {
				add(ValidationIssue{
					Type: IssueMissingRequiredField, Severity: SeverityMajor, Rule: RuleRequiredContext, Field: "context." + k,
					Message: fmt.Sprintf("Step %q is missing required context field %q", s.Name, k), Expected: k,
				})
			}
		}
	}
	for _, k := range step.Optional {
		if _, ok := s.Context[k]; !ok {
			add(ValidationIssue{
				Type: IssueMissingOptionalField, Severity: SeverityInfo, Rule: RuleOptionalContext, Field: "context." + k,
				Message: fmt.Sprintf("Step %q has no optional context field %q", s.Name, k), Expected: k,
			})
		}
	}
	if len(step.Required)+len(step.Optional) > 0 {
		for _, k := range sortedKeys(s.Context) {
			if documented(step, k) {
				continue
			}
			add(ValidationIssue{
				Type: IssueExtraUndocumentedField, Severity: SeverityInfo, Rule: RuleDocumentedContext, Field: "context." + k,
				Message: fmt.Sprintf("Step %q has context field %q that the contract does not document", s.Name, k), Actual: k,
			})
		}
	}

	if s.Attempt > 1 {
		retries := s.Attempt - 1
		add(ValidationIssue{
			Type: IssueRetryAttempted, Severity: SeverityMinor, Rule: RuleMaxRetries,
			Message: fmt.Sprintf("Step %q retried (attempt %d)", s.Name, s.Attempt), Actual: fmt.Sprint(retries),
		})
		if tr, ok := c.Transition(s.Name); ok {
			switch {
			case !tr.CanRetry:
				add(ValidationIssue{
					Type: IssueRetryLimitExceeded, Severity: SeverityMajor, Rule: RuleMaxRetries,
					Message:  fmt.Sprintf("Step %q may not be retried (can_retry is false), but this is attempt %d", s.Name, s.Attempt),
					Expected: "0", Actual: fmt.Sprint(retries),
				})
			case tr.MaxRetries > 0 && retries > tr.MaxRetries:
				add(ValidationIssue{
					Type: IssueRetryLimitExceeded, Severity: SeverityMajor, Rule: RuleMaxRetries,
					Message:  fmt.Sprintf("Step %q retried %d times, more than max_retries %d", s.Name, retries, tr.MaxRetries),
					Expected: fmt.Sprint(tr.MaxRetries), Actual: fmt.Sprint(retries),
				})
			}
		}
	}

	if step.Timeout > 0 && !s.StartedAt.IsZero() && !s.FinishedAt.IsZero() {
		if took := s.FinishedAt.Sub(s.StartedAt); took > step.Timeout {
			add(ValidationIssue{
				Type: IssueStepTimeoutExceeded, Severity: SeverityMajor, Rule: RuleTimeout,
				Message:  fmt.Sprintf("Step %q took %s, longer than its timeout of %s", s.Name, roundDur(took), step.Timeout),
				Expected: step.Timeout.String(), Actual: roundDur(took).String(),
			})
		}
	}

	if c.IsTerminal(s.Name) && StepSucceeded(s.Status) && !c.AllowMultipleTerminals {
		for _, r := range t.Steps {
			// Members of one parallel group are terminal together.
			if c.IsTerminal(r.Name) && StepSucceeded(r.Status) && !c.sameGroup(r.Name, s.Name) {
				sev := c.MultipleTerminalsSeverity
				if sev == "" {
					sev = SeverityMinor
				}
				add(ValidationIssue{
					Type: IssueMultipleTerminalStates, Severity: sev, Rule: RuleTerminalSteps,
					Message:  fmt.Sprintf("Terminal step %q succeeded after terminal step %q already had", s.Name, r.Name),
					Expected: r.Name, Actual: s.Name,
				})
				break
			}
		}
	}

	issues = append(issues, groupDurationIssues(c, t.Steps, s, now)...)

	return NewValidationResult(issues)
}

// CompletesThread reports whether recording s completes the thread: a terminal
// step that succeeded without an issue that fails the thread. (A terminal step
// with such an issue fails the thread instead; see FailsThread.)
func (r ValidationResult) CompletesThread(c Contract, s StepInput) bool {
	return c.IsTerminal(s.Name) && StepSucceeded(s.Status) && !r.HasCritical
}

// FailsThread reports whether the result contains a critical or major issue.
func (r ValidationResult) FailsThread() bool { return r.HasCritical }

// MostSevere returns the strongest issue, for a one-line summary.
func (r ValidationResult) MostSevere() (ValidationIssue, bool) {
	best, found := ValidationIssue{}, false
	for _, is := range r.Issues {
		if !found || severityRank(is.Severity) < severityRank(best.Severity) {
			best, found = is, true
		}
	}
	return best, found
}

func severityRank(s Severity) int {
	for i, v := range Severities {
		if v == s {
			return i
		}
	}
	return len(Severities)
}

// succeededAt is when the latest success of step name was recorded.
func succeededAt(steps []RecordedStep, name string) (time.Time, bool) {
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].Name == name && StepSucceeded(steps[i].Status) {
			return steps[i].RecordedAt, true
		}
	}
	return time.Time{}, false
}

func lastSucceeded(steps []RecordedStep) (string, bool) {
	s, ok := lastSuccess(steps)
	return s.Name, ok
}

// lastSuccess returns the latest succeeded attempt.
func lastSuccess(steps []RecordedStep) (RecordedStep, bool) {
	for i := len(steps) - 1; i >= 0; i-- {
		if StepSucceeded(steps[i].Status) {
			return steps[i], true
		}
	}
	return RecordedStep{}, false
}

// missingDependencies lists step's prerequisites with no success yet.
func missingDependencies(step ContractStep, steps []RecordedStep) []string {
	var out []string
	for _, d := range step.DependsOn {
		if _, ok := succeededAt(steps, d); !ok {
			out = append(out, d)
		}
	}
	return out
}

func documented(step ContractStep, key string) bool {
	if contains(step.Required, key) || contains(step.Optional, key) {
		return true
	}
	if k, ok := strings.CutPrefix(key, "private_"); ok {
		return contains(step.Required, k) || contains(step.Optional, k)
	}
	return false
}

func stepNames(c Contract) []string {
	out := make([]string, len(c.Steps))
	for i, s := range c.Steps {
		out[i] = s.Name
	}
	return out
}

func roundDur(d time.Duration) time.Duration {
	if d > time.Second {
		return d.Round(time.Millisecond)
	}
	return d
}
