package domain

import (
	"reflect"
	"testing"
	"time"
)

// paymentContract: approval (reviewer, entry) then charge (processor,
// terminal) which needs a fresh approval before each invocation; no
// transition rules.
func paymentContract() Contract {
	return Contract{Name: "payment", Version: 1, FreeOrder: true, EntryPoints: []string{"approval"}, TerminalSteps: []string{"charge"},
		Parties: []string{"reviewer", "processor"}, MaxDuration: time.Hour,
		Steps: []ContractStep{
			{Name: "approval", Owner: "reviewer", Type: StepTypeManaged, Required: []string{"reference"},
				ContentRules: []ContentRule{{Field: "reference", Operator: OpNonEmpty}}},
			{Name: "charge", Owner: "processor", Type: StepTypeManaged, DependsOn: []string{"approval"}, FreshDependsOn: []string{"approval"},
				Required:     []string{"amount", "currency"},
				ContentRules: []ContentRule{{Field: "amount", Operator: OpGT, Value: "0"}, {Field: "currency", Operator: OpOneOf, Values: []string{"GBP", "EUR"}}}},
		}}
}

// orderContract: strict transitions a -> b -> c, b owned by warehouse.
func orderContract() Contract {
	return Contract{Name: "order", Version: 1, EntryPoints: []string{"a"}, TerminalSteps: []string{"c"}, Parties: []string{"shop", "warehouse"},
		Steps:       []ContractStep{{Name: "a", Owner: "shop"}, {Name: "b", Owner: "warehouse"}, {Name: "c", Owner: "shop"}},
		Transitions: []Transition{{From: "a", To: []string{"b"}, CanRetry: true}, {From: "b", To: []string{"c"}, CanRetry: true}}}
}

func hist(steps ...string) []RecordedStep {
	var out []RecordedStep
	for i, s := range steps {
		out = append(out, RecordedStep{ID: s + "-" + string(rune('0'+i)), Name: s, Status: string(StepStatusSuccess)})
	}
	return out
}

func TestCan(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start.Add(time.Minute)
	pay, order := paymentContract(), orderContract()
	active := func(roles []string, h ...string) DecisionThread {
		return DecisionThread{Status: ThreadActive, StartedAt: start, History: hist(h...), Roles: roles}
	}
	tests := []struct {
		name      string
		c         Contract
		t         DecisionThread
		step      string
		candidate map[string]string
		now       time.Time
		status    DecisionStatus
		reason    string
		missing   []string
		previous  string
	}{
		{"entry", pay, active([]string{"reviewer"}), "approval", nil, now, DecisionAllowed, ReasonAllowed, []string{}, ""},
		{"not entry", order, active([]string{"warehouse"}), "b", nil, now, DecisionDenied, ReasonNotEntryPoint, []string{}, ""},
		{"missing prerequisite", pay, active([]string{"processor"}), "charge", nil, now, DecisionDenied, "missing required prior steps: [approval]", []string{"approval"}, ""},
		{"fresh needs claim", pay, active([]string{"processor"}, "approval"), "charge", nil, now, DecisionRequiresClaim, ReasonRequiresClaim, []string{}, "approval"},
		{"closed", pay, DecisionThread{Status: ThreadCompleted, History: hist("approval")}, "approval", nil, now, DecisionDenied, "thread is completed", []string{}, "approval"},
		{"strict transition", order, active([]string{"shop"}, "a"), "c", nil, now, DecisionDenied, `strict transition from "a" to "c" is not allowed`, []string{}, "a"},
		{"transition ok", order, active([]string{"warehouse"}, "a"), "b", nil, now, DecisionAllowed, ReasonAllowed, []string{}, "a"},
		{"owner", order, active([]string{"shop"}, "a"), "b", nil, now, DecisionDenied, ReasonOwnerRequired, []string{}, "a"},
		{"owner on claim", pay, active([]string{"reviewer"}, "approval"), "charge", nil, now, DecisionDenied, ReasonOwnerRequired, []string{}, "approval"},
		{"duration", pay, active([]string{"reviewer"}), "approval", nil, start.Add(2 * time.Hour), DecisionDenied, ReasonMaxDuration, []string{}, ""},
		{"free order", pay, active([]string{"reviewer"}, "approval", "charge"), "approval", nil, now, DecisionAllowed, ReasonAllowed, []string{}, "charge"},
		{"candidate refused", pay, active([]string{"processor"}, "approval"), "charge", map[string]string{"amount": "0", "currency": "GBP"}, now,
			DecisionDenied, `content field "amount" violates gt rule: must be a number greater than 0`, []string{}, "approval"},
		{"candidate accepted", pay, active([]string{"processor"}, "approval"), "charge", map[string]string{"amount": "1", "currency": "GBP"}, now,
			DecisionRequiresClaim, ReasonRequiresClaim, []string{}, "approval"},
		{"candidate required", pay, active([]string{"reviewer"}), "approval", map[string]string{}, now, DecisionDenied, `required content field "reference" is missing`, []string{}, ""},
	}
	for _, tt := range tests {
		d, err := Can(tt.c, tt.t, tt.step, tt.candidate, tt.now)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if d.Status != tt.status || d.Reason != tt.reason || d.Allowed != (tt.status == DecisionAllowed) || !reflect.DeepEqual(d.MissingSteps, tt.missing) ||
			d.PreviousStep != tt.previous || d.MatchedBy != MatchedExact || d.StepName != tt.step {
			t.Errorf("%s: %+v", tt.name, d)
		}
	}
	if _, err := Can(pay, active(nil), "refund", nil, now); err == nil || AsError(err).Message != `action "refund" is not defined in the contract` {
		t.Errorf("unknown action: %v", err)
	}
}

// A fresh prerequisite known to be spent is denied rather than claimable.
func TestCanFreshConsumed(t *testing.T) {
	t.Parallel()
	th := DecisionThread{Status: ThreadActive, History: hist("approval", "charge"), Roles: []string{"processor"},
		Consumed: map[string]map[string]bool{"charge": {"approval-0": true}}}
	d, _ := Can(paymentContract(), th, "charge", nil, time.Now())
	if d.Status != DecisionDenied || d.Reason != `step "approval" must succeed again before this invocation: its latest success was used by an earlier one` {
		t.Errorf("%+v", d)
	}
	th.History = append(th.History, RecordedStep{ID: "approval-2", Name: "approval", Status: "success"})
	if d, _ := Can(paymentContract(), th, "charge", nil, time.Now()); d.Status != DecisionRequiresClaim {
		t.Errorf("a new approval: %+v", d)
	}
}

func TestResolveAction(t *testing.T) {
	t.Parallel()
	c := paymentContract()
	tests := []struct {
		action, goal string
		step         string
		classifier   bool
		err          string
	}{
		{"charge", "", "charge", false, ""},
		{"", " approval ", "approval", false, ""},
		{"", "take the money", "", true, ""},
		{"", "", "", false, "provide exactly one of action or goal"},
		{"charge", "x", "", false, "provide exactly one of action or goal"},
		{"refund", "", "", false, `action "refund" is not defined in the contract`},
	}
	for _, tt := range tests {
		step, needs, err := ResolveAction(c, tt.action, tt.goal)
		if step != tt.step || needs != tt.classifier || (err == nil) != (tt.err == "") || err != nil && AsError(err).Message != tt.err {
			t.Errorf("%q/%q: %q %v %v", tt.action, tt.goal, step, needs, err)
		}
	}
	if u := UncertainDecision("no classifier"); u.Status != DecisionUncertain || u.MatchedBy != MatchedNone || u.Allowed || u.RequiredSteps == nil {
		t.Errorf("%+v", u)
	}
}

func TestShould(t *testing.T) {
	t.Parallel()
	c := paymentContract()
	th := DecisionThread{Status: ThreadActive, Roles: []string{"reviewer", "processor"}}
	s, _ := Should(c, th, "charge", time.Now())
	if s.Eligible || s.Recommendation != RecommendNo || s.Reason != "missing required prior steps: [approval]" {
		t.Errorf("not eligible: %+v", s)
	}
	th.History = hist("approval")
	s, _ = Should(c, th, "charge", time.Now())
	if !s.Eligible || s.Recommendation != RecommendUnavailable || s.Reason != ReasonNoClassifier {
		t.Errorf("claimable: %+v", s)
	}
	if r := s.Recommend("yes", 0.91); r.Recommendation != RecommendYes || r.Reason != "classifier selected yes with probability 0.91" {
		t.Errorf("%+v", r)
	}
	if r := s.Recommend("no", 0.5); r.Recommendation != RecommendUncertain {
		t.Errorf("%+v", r)
	}
}

func TestNext(t *testing.T) {
	t.Parallel()
	start := time.Now()
	order := orderContract()
	th := DecisionThread{Status: ThreadActive, StartedAt: start, Roles: []string{"shop", "warehouse"}}
	n := Next(order, th, start)
	if want := []NextPath{{Actions: []string{"a", "b", "c"}, Status: DecisionAllowed, Reason: ReasonNextEligible}}; !reflect.DeepEqual(n.Paths, want) {
		t.Errorf("start: %+v", n.Paths)
	}
	th.History = hist("a")
	if n := Next(order, th, start); len(n.Paths) != 1 || !reflect.DeepEqual(n.Paths[0].Actions, []string{"b", "c"}) {
		t.Errorf("after a: %+v", n.Paths)
	}
	th.Roles = []string{"shop"} // b is the warehouse's
	if n := Next(order, th, start); len(n.Paths) != 0 {
		t.Errorf("without the owner role: %+v", n.Paths)
	}
	pay := paymentContract()
	pt := DecisionThread{Status: ThreadActive, StartedAt: start, Roles: []string{"reviewer", "processor"}, History: hist("approval")}
	n = Next(pay, pt, start)
	want := []NextPath{
		{Actions: []string{"approval", "charge"}, Status: DecisionAllowed, Reason: ReasonNextEligible},
		{Actions: []string{"charge"}, Status: DecisionRequiresClaim, Reason: ReasonNextNeedsClaim},
	}
	if !reflect.DeepEqual(n.Paths, want) {
		t.Errorf("payment: %+v", n.Paths)
	}
	if n := Next(pay, pt, start.Add(2*time.Hour)); len(n.Paths) != 0 || n.Paths == nil {
		t.Errorf("past max duration: %+v", n.Paths)
	}
	// Bounded: at most 32 paths of at most 4 actions, whatever the graph.
	var big Contract
	big.FreeOrder = true
	for i := 0; i < 40; i++ {
		big.Steps = append(big.Steps, ContractStep{Name: string(rune('A' + i))})
	}
	for i := 1; i < 40; i++ {
		for j := 0; j < i; j++ {
			big.Steps[i].DependsOn = append(big.Steps[i].DependsOn, big.Steps[j].Name)
		}
	}
	big.Steps[1].DependsOn = nil
	n = Next(big, DecisionThread{Status: ThreadActive}, start)
	if len(n.Paths) == 0 || len(n.Paths) > MaxNextPaths {
		t.Errorf("%d paths", len(n.Paths))
	}
	for _, p := range n.Paths {
		if len(p.Actions) > MaxNextPathActions {
			t.Errorf("path %v", p.Actions)
		}
	}
}

func TestCheckPrerequisites(t *testing.T) {
	t.Parallel()
	charge := paymentContract().Steps[1]
	tests := []struct {
		name     string
		history  []RecordedStep
		consumed map[string]bool
		want     PrerequisiteCheck
	}{
		{"none yet", nil, nil, PrerequisiteCheck{Missing: []string{"approval"}}},
		{"fresh", hist("approval"), nil, PrerequisiteCheck{Consume: []string{"approval-0"}}},
		{"spent", hist("approval"), map[string]bool{"approval-0": true}, PrerequisiteCheck{Stale: []string{"approval"}}},
		// Two approvals before a charge still allow one charge: the latest
		// is consumed, and the earlier one is older than that invocation.
		{"two approvals, one spent", hist("approval", "approval"), map[string]bool{"approval-1": true}, PrerequisiteCheck{Stale: []string{"approval"}}},
		{"new approval", append(hist("approval", "charge"), RecordedStep{ID: "a2", Name: "approval", Status: "success"}), map[string]bool{"approval-0": true},
			PrerequisiteCheck{Consume: []string{"a2"}}},
		{"failed approval", append(hist("approval"), RecordedStep{ID: "a2", Name: "approval", Status: "failed"}), map[string]bool{"approval-0": true},
			PrerequisiteCheck{Stale: []string{"approval"}}},
	}
	for _, tt := range tests {
		got := CheckPrerequisites(charge, tt.history, tt.consumed)
		if !reflect.DeepEqual(got, tt.want) || got.Satisfied() != (len(tt.want.Missing)+len(tt.want.Stale) == 0) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// Step validation honours free order (no invalid_transition without
// transition rules) and prerequisites (missing_dependency).
func TestValidateStepGherkinRules(t *testing.T) {
	t.Parallel()
	c := paymentContract()
	now := time.Now()
	r := ValidateStep(c, ThreadSnapshot{Steps: hist("approval", "charge")}, StepInput{Name: "approval", Status: "success"}, now)
	for _, is := range r.Issues {
		if is.Type == IssueInvalidTransition {
			t.Errorf("free order refused: %+v", is)
		}
	}
	r = ValidateStep(c, ThreadSnapshot{}, StepInput{Name: "charge", Status: "success", Context: map[string]string{"amount": "1", "currency": "GBP"}}, now)
	found := false
	for _, is := range r.Issues {
		if is.Type == IssueMissingDependency {
			found = is.Severity == SeverityCritical && is.Message == "Step 'charge' is missing required prior steps: approval"
		}
	}
	if !found || r.OverallStatus != ValidationViolated {
		t.Errorf("missing dependency: %+v", r.Issues)
	}
}

// A fresh approval a grant (or an unguarded report) consumed is known to
// can through NewDecisionThread, also once that grant was cancelled.
func TestDecisionThreadKnowsFreshConsumption(t *testing.T) {
	t.Parallel()
	c := paymentContract()
	th := Thread{Status: ThreadActive}
	history := hist("approval")
	grants := []StepGrant{{InvocationID: "i1", StepName: "charge", Status: GrantCancelled, FreshConsumed: []string{history[0].ID}}}
	d := NewDecisionThread(th, c, []string{"processor"}, history, nil, grants)
	if got, _ := Can(c, d, "charge", nil, time.Now()); got.Status != DecisionDenied {
		t.Fatalf("approval consumed by a cancelled grant: %+v", got)
	}
	d = NewDecisionThread(th, c, []string{"processor"}, history, nil, nil)
	if got, _ := Can(c, d, "charge", nil, time.Now()); got.Status != DecisionRequiresClaim {
		t.Fatalf("unconsumed approval: %+v", got)
	}
}
