package domain

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// DecisionStatus is the answer of a can query.
type DecisionStatus string

const (
	// DecisionAllowed: every contract rule the engine can judge now holds.
	DecisionAllowed DecisionStatus = "allowed"
	// DecisionDenied: a rule refuses the step now (Reason says which).
	DecisionDenied DecisionStatus = "denied"
	// DecisionRequiresClaim: the step has fresh prerequisites; only an
	// atomic waitFor claim can take one, so the answer is not a yes.
	DecisionRequiresClaim DecisionStatus = "requires_claim"
	// DecisionUncertain: a natural-language goal named no action.
	DecisionUncertain DecisionStatus = "uncertain"
)

// How a can query's action was identified (CanDecision.MatchedBy).
const (
	MatchedExact      = "exact"
	MatchedClassifier = "classifier"
	MatchedNone       = "none"
)

// Should recommendations.
const (
	RecommendYes         = "yes"
	RecommendNo          = "no"
	RecommendUncertain   = "uncertain"
	RecommendUnavailable = "unavailable"
)

// Bounds of decision queries (the reference engine's).
const (
	MaxGoalLen             = 4096
	MaxNextPathActions     = 4
	MaxNextPaths           = 32
	ClassifierMinAgreement = 0.75
	MaxCandidateFields     = 128
	MaxCandidateValueLen   = 4096
)

// Decision reasons, as the reference engine words them.
const (
	ReasonAllowed        = "all contract constraints are satisfied"
	ReasonRequiresClaim  = "Per-invocation prerequisites require waitFor to check and claim a fresh occurrence"
	ReasonNotEntryPoint  = "action is not a contract entry point"
	ReasonMaxDuration    = "thread maximum duration exceeded"
	ReasonOwnerRequired  = "step owner role required"
	ReasonNoClassifier   = "classifier is not configured; action is contract-eligible"
	ReasonNextEligible   = "first action is eligible at this snapshot; later actions are conditional"
	ReasonNextNeedsClaim = "first action requires an atomic waitFor claim; later actions are conditional"
)

// DecisionThread is what decision queries know about one thread: a
// snapshot read once, so one answer is consistent.
type DecisionThread struct {
	Status    ThreadStatus
	StartedAt time.Time
	// History is every recorded attempt, oldest first (engine order); its
	// successes are what the thread has done.
	History []RecordedStep
	// Roles are the caller's party roles on the thread.
	Roles []string
	// Consumed, when the caller knows it, holds for each step the IDs of
	// prerequisite successes its earlier invocations consumed (see
	// CheckPrerequisites): a fresh prerequisite already spent is then
	// denied rather than left to the claim. nil: not known.
	Consumed map[string]map[string]bool
	// Snapshots are the latest validated success contexts of the steps a
	// candidate context's references read (see ContractStep.ReferencedSteps).
	Snapshots map[string]map[string]string
}

// CanDecision answers "may the caller record this step now?". It is
// read-only: nothing is reserved, and a later report is judged again.
type CanDecision struct {
	StepName       string         `json:"stepName"`
	Allowed        bool           `json:"allowed"`
	Status         DecisionStatus `json:"status"`
	MatchedBy      string         `json:"matchedBy"`
	RequiredSteps  []string       `json:"requiredSteps"`
	SatisfiedSteps []string       `json:"satisfiedSteps"`
	MissingSteps   []string       `json:"missingSteps"`
	// PreviousStep is the latest successful step ("" when none).
	PreviousStep string `json:"previousStep,omitempty"`
	Reason       string `json:"reason"`
	// Violations are the candidate context's content violations, when a
	// context was judged and refused.
	Violations []ContentViolation `json:"violations,omitempty"`
}

// ShouldDecision is advice on an action: never a permission.
type ShouldDecision struct {
	StepName       string `json:"stepName"`
	Eligible       bool   `json:"eligible"`
	Recommendation string `json:"recommendation"`
	Reason         string `json:"reason"`
}

// NextPath is a sequence of actions the thread could take from now. Only
// the first is judged at this snapshot; later ones are conditional.
type NextPath struct {
	Actions []string       `json:"actions"`
	Status  DecisionStatus `json:"status"`
	Reason  string         `json:"reason"`
}

// NextDecision lists the paths open to the caller.
type NextDecision struct {
	Paths []NextPath `json:"paths"`
}

// Actions lists the steps a decision may name, sorted (groups are not
// actions).
func (c Contract) Actions() []string {
	out := make([]string, 0, len(c.Steps))
	for _, s := range c.Steps {
		if !contains(out, s.Name) {
			out = append(out, s.Name)
		}
	}
	sort.Strings(out)
	return out
}

// ResolveAction picks the step a can or should query is about: exactly one
// of action (a step of c) and goal. A goal that names a step exactly
// resolves to it; any other goal needs a classifier over c.Actions():
// needsClassifier is then true (goal trimmed, at most 4096 characters), and
// without one the caller answers UncertainDecision.
func ResolveAction(c Contract, action, goal string) (step string, needsClassifier bool, err error) {
	action, goal = strings.TrimSpace(action), strings.TrimSpace(goal)
	if (action == "") == (goal == "") {
		return "", false, Invalid("action", "provide exactly one of action or goal")
	}
	actions := c.Actions()
	if action != "" {
		if !contains(actions, action) {
			return "", false, Invalid("action", "action %q is not defined in the contract", action)
		}
		return action, false, nil
	}
	if len(goal) > MaxGoalLen {
		return "", false, Invalid("goal", "goal must be at most %d characters", MaxGoalLen)
	}
	if contains(actions, goal) {
		return goal, false, nil
	}
	return "", true, nil
}

// UncertainDecision is the can answer when a goal could not be matched to
// one action (no classifier, low confidence, unrelated goal): reason says
// why.
func UncertainDecision(reason string) CanDecision {
	return CanDecision{Status: DecisionUncertain, MatchedBy: MatchedNone, Reason: reason,
		RequiredSteps: []string{}, SatisfiedSteps: []string{}, MissingSteps: []string{}}
}

// Can judges whether the caller may record step now, in order: the thread
// is active; every prerequisite has succeeded; with transition rules, the
// step may follow the latest successful step; with no success yet, it is an
// entry point; a step with fresh prerequisites requires a claim (denied when
// the latest fresh success is known to be spent); then, for an allowed or
// claimable step, the thread's maximum duration, the caller's owner role
// and, when candidate is not nil, the candidate context (checked as a
// success: content rules, required fields, references).
//
// Unlike the reference engine, a requires_claim answer has also passed the
// duration, owner and context checks, so it never promises a claim that
// would be refused for them. step must be one of c.Actions() (see
// ResolveAction); matchedBy is MatchedExact unless the caller's classifier
// chose the step.
func Can(c Contract, t DecisionThread, step string, candidate map[string]string, now time.Time) (CanDecision, error) {
	st, ok := c.Step(step)
	if !ok {
		return CanDecision{}, Invalid("action", "action %q is not defined in the contract", step)
	}
	d := propose(c, t, st, successes(t.History), true)
	d.MatchedBy = MatchedExact
	if d.Status != DecisionAllowed && d.Status != DecisionRequiresClaim {
		return d, nil
	}
	deny := func(reason string) (CanDecision, error) {
		d.Allowed, d.Status, d.Reason = false, DecisionDenied, reason
		return d, nil
	}
	if c.MaxDuration > 0 && !t.StartedAt.IsZero() && now.Sub(t.StartedAt) > c.MaxDuration {
		return deny(ReasonMaxDuration)
	}
	if !ownerHeld(c, st, t.Roles) {
		return deny(ReasonOwnerRequired)
	}
	if candidate != nil {
		res := CheckStepContent(st, ContentCheck{Status: StepStatusSuccess, Context: candidate, Snapshots: t.Snapshots})
		if !res.OK() {
			d.Violations = res.Violations
			return deny(res.Violations[0].Message)
		}
	}
	return d, nil
}

// Should advises on step without a classifier: a step can denies is not
// eligible ("no", with can's reason); an eligible one (allowed, or
// claimable, unlike the reference engine which says "no" to a claimable
// step) is "unavailable" until a classifier advises (see Recommend).
func Should(c Contract, t DecisionThread, step string, now time.Time) (ShouldDecision, error) {
	d, err := Can(c, t, step, nil, now)
	if err != nil {
		return ShouldDecision{}, err
	}
	if d.Status != DecisionAllowed && d.Status != DecisionRequiresClaim {
		return ShouldDecision{StepName: step, Recommendation: RecommendNo, Reason: d.Reason}, nil
	}
	return ShouldDecision{StepName: step, Eligible: true, Recommendation: RecommendUnavailable, Reason: ReasonNoClassifier}, nil
}

// Recommend turns a classifier's answer about an eligible step into advice:
// its label (yes, no or uncertain) when its probability is at least 0.75,
// else uncertain.
func (s ShouldDecision) Recommend(label string, probability float64) ShouldDecision {
	if !s.Eligible {
		return s
	}
	rec := label
	if rec != RecommendYes && rec != RecommendNo || probability < ClassifierMinAgreement {
		rec = RecommendUncertain
	}
	s.Recommendation = rec
	s.Reason = "classifier selected " + label + " with probability " + strconv.FormatFloat(probability, 'f', 2, 64)
	return s
}

// Next lists the paths of up to 4 actions the caller could take, at most
// 32, without ranking: each first action is an allowed or claimable step
// whose owner role the caller holds (alphabetical), extended depth-first
// along the contract's topology (transitions and prerequisite edges,
// alphabetical) by steps that would be allowed after the path so far, never
// repeating a step. A thread past its maximum duration has no paths.
func Next(c Contract, t DecisionThread, now time.Time) NextDecision {
	out := NextDecision{Paths: []NextPath{}}
	if t.Status != ThreadActive || c.MaxDuration > 0 && !t.StartedAt.IsZero() && now.Sub(t.StartedAt) > c.MaxDuration {
		return out
	}
	topo := c.Topology()
	done := successes(t.History)
	for _, a := range c.Actions() {
		if len(out.Paths) >= MaxNextPaths {
			break
		}
		d, _ := Can(c, t, a, nil, now)
		if d.Status != DecisionAllowed && d.Status != DecisionRequiresClaim {
			continue
		}
		reason := ReasonNextEligible
		if d.Status == DecisionRequiresClaim {
			reason = ReasonNextNeedsClaim
		}
		extendPaths(c, t, topo, done, []string{a}, func(path []string) bool {
			out.Paths = append(out.Paths, NextPath{Actions: path, Status: d.Status, Reason: reason})
			return len(out.Paths) < MaxNextPaths
		})
	}
	return out
}

// extendPaths emits every maximal extension of path; emit returns false to
// stop.
func extendPaths(c Contract, t DecisionThread, topo map[string][]string, done []RecordedStep, path []string, emit func([]string) bool) bool {
	last := path[len(path)-1]
	if len(path) >= MaxNextPathActions || len(topo[last]) == 0 {
		return emit(append([]string(nil), path...))
	}
	future := append([]RecordedStep(nil), done...)
	for _, p := range path {
		future = append(future, RecordedStep{Name: p, Status: string(StepStatusSuccess)})
	}
	added := false
	for _, cand := range topo[last] {
		st, ok := c.Step(cand)
		if !ok || contains(path, cand) {
			continue
		}
		d := propose(c, t, st, future, false)
		if d.Status != DecisionAllowed && d.Status != DecisionRequiresClaim {
			continue
		}
		added = true
		if !extendPaths(c, t, topo, done, append(append([]string(nil), path...), cand), emit) {
			return false
		}
	}
	if !added {
		return emit(append([]string(nil), path...))
	}
	return true
}

// propose applies the ordering rules (status, prerequisites, transitions,
// entry points, fresh prerequisites) to step given done, the successes so
// far, oldest first. fresh: judge freshness from t.Consumed when known.
func propose(c Contract, t DecisionThread, st ContractStep, done []RecordedStep, fresh bool) CanDecision {
	d := CanDecision{StepName: st.Name, Status: DecisionDenied, RequiredSteps: append([]string{}, st.DependsOn...),
		SatisfiedSteps: []string{}, MissingSteps: []string{}}
	succeeded := map[string]bool{}
	for _, s := range done {
		succeeded[s.Name] = true
	}
	for _, r := range d.RequiredSteps {
		if succeeded[r] {
			d.SatisfiedSteps = append(d.SatisfiedSteps, r)
		} else {
			d.MissingSteps = append(d.MissingSteps, r)
		}
	}
	if len(done) > 0 {
		d.PreviousStep = done[len(done)-1].Name
	}
	switch {
	case t.Status != ThreadActive:
		d.Reason = fmt.Sprintf("thread is %s", t.Status)
	case len(d.MissingSteps) > 0:
		d.Reason = fmt.Sprintf("missing required prior steps: [%s]", strings.Join(d.MissingSteps, " "))
	case !c.FreeOrder && d.PreviousStep != "" && !contains(c.AllowedNext(d.PreviousStep), st.Name):
		d.Reason = fmt.Sprintf("strict transition from %q to %q is not allowed", d.PreviousStep, st.Name)
	case d.PreviousStep == "" && len(c.EntryPoints) > 0 && !c.IsEntryPoint(st.Name):
		d.Reason = ReasonNotEntryPoint
	case len(st.FreshDependsOn) > 0:
		if fresh && t.Consumed != nil {
			if pc := CheckPrerequisites(st, done, t.Consumed[st.Name]); len(pc.Stale) > 0 {
				d.Reason = fmt.Sprintf("step %q must succeed again before this invocation: its latest success was used by an earlier one", pc.Stale[0])
				break
			}
		}
		d.Status, d.Reason = DecisionRequiresClaim, ReasonRequiresClaim
	default:
		d.Allowed, d.Status, d.Reason = true, DecisionAllowed, ReasonAllowed
	}
	return d
}

// ownerHeld reports whether roles include st's owner (always, on an open
// contract or a step without owner).
func ownerHeld(c Contract, st ContractStep, roles []string) bool {
	return c.Open() || st.Owner == "" || contains(roles, st.Owner)
}

func successes(history []RecordedStep) []RecordedStep {
	var out []RecordedStep
	for _, h := range history {
		if StepSucceeded(h.Status) {
			out = append(out, h)
		}
	}
	return out
}

// CandidateContext reads a can query's candidate context (a JSON object)
// into strings: at most 128 fields, each a string, number or boolean of at
// most 4096 characters. Numbers keep their literal text when they arrive
// as json.Number (decode with UseNumber), so "12.50" stays "12.50".
func CandidateContext(raw map[string]any) (map[string]string, error) {
	if len(raw) > MaxCandidateFields {
		return nil, Invalid("context", "context has too many fields")
	}
	out := make(map[string]string, len(raw))
	for _, k := range sortedKeys(raw) {
		var s string
		switch v := raw[k].(type) {
		case string:
			s = v
		case bool:
			s = strconv.FormatBool(v)
		case interface{ String() string }: // json.Number
			s = v.String()
		case float64:
			s = strconv.FormatFloat(v, 'f', -1, 64)
		case int:
			s = strconv.Itoa(v)
		case int64:
			s = strconv.FormatInt(v, 10)
		default:
			return nil, Invalid("context", "context field %q must be a string, number, or boolean", k)
		}
		if len(s) > MaxCandidateValueLen {
			return nil, Invalid("context", "context field %q is too long", k)
		}
		out[k] = s
	}
	return out, nil
}
