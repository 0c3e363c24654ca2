package domain

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// rstep is a recorded step for replayInput, which records them a minute
// apart from start.
type rstep struct {
	name, status string
	ctx          map[string]string
	roles        []string
	key          string
}

func replayInput(start time.Time, steps ...rstep) ReplayInput {
	in := ReplayInput{StartedAt: start}
	for i, s := range steps {
		at := start.Add(time.Duration(i+1) * time.Minute)
		key := s.key
		if key == "" {
			key = s.name
		}
		in.Steps = append(in.Steps, ReplayStep{ID: s.name + "-" + string(rune('a'+i)), Name: s.name, IdempotencyKey: key, Status: s.status,
			Context: s.ctx, StartedAt: at.Add(-time.Second), FinishedAt: at, RecordedAt: at, Roles: s.roles})
	}
	return in
}

func findingKeys(v ReplayVerdict) []string {
	var out []string
	for _, f := range v.Findings {
		out = append(out, strings.Join([]string{string(f.Outcome), f.Type, f.Rule, f.Step, f.Field}, "/")+"×"+string(rune('0'+f.Steps)))
	}
	return out
}

func TestReplayThread(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pay, order := paymentContract(), orderContract()
	rev, proc := []string{"reviewer"}, []string{"processor"}
	approval := rstep{name: "approval", status: "success", ctx: map[string]string{"reference": "R-1"}, roles: rev}
	charge := func(amount, currency string) rstep {
		return rstep{name: "charge", status: "success", ctx: map[string]string{"amount": amount, "currency": currency}, roles: proc}
	}
	tests := []struct {
		name     string
		c        Contract
		steps    []rstep
		findings []string
		ended    ThreadStatus
		endedAt  int
		judged   int
		refused  int
		passes   bool
	}{
		{"all good", pay, []rstep{approval, charge("12.50", "EUR")}, nil, ThreadCompleted, 1, 2, 0, true},
		{"amount refused, the retry completes", pay, []rstep{approval,
			{name: "charge", status: "success", ctx: map[string]string{"amount": "0", "currency": "EUR"}, roles: proc, key: "c1"},
			{name: "charge", status: "success", ctx: map[string]string{"amount": "5", "currency": "EUR"}, roles: proc, key: "c2"}},
			[]string{"refused/content_rule_failed/gt/charge/amount×1"}, ThreadCompleted, 2, 3, 1, false},
		{"currency and amount: every violation, the step once", pay, []rstep{approval, charge("-1", "JPY")},
			[]string{"refused/content_rule_failed/gt/charge/amount×1", "refused/content_rule_failed/one_of/charge/currency×1"}, "", -1, 2, 1, false},
		{"a refused approval is not recorded: the charge misses it", pay, []rstep{
			{name: "approval", status: "success", ctx: map[string]string{"reference": "  "}, roles: rev}, charge("5", "EUR")},
			[]string{"refused/content_rule_failed/nonempty/approval/reference×1", "violated/invalid_entry_point/entry_points/charge/stepName×1",
				"violated/missing_dependency/depends_on/charge/stepName×1"},
			ThreadFailed, 1, 2, 1, false},
		{"one approval, two charges: the second needs a fresh one", Contract{Name: "payment", Version: 2, FreeOrder: true,
			EntryPoints: []string{"approval"}, TerminalSteps: []string{"done"}, Parties: []string{"reviewer", "processor"},
			Steps: []ContractStep{{Name: "approval", Owner: "reviewer"}, {Name: "charge", Owner: "processor", DependsOn: []string{"approval"},
				FreshDependsOn: []string{"approval"}}, {Name: "done", Owner: "processor"}}},
			[]rstep{approval, {name: "charge", status: "success", roles: proc, key: "c1"}, {name: "charge", status: "success", roles: proc, key: "c2"}},
			[]string{"violated/fresh_dependency_required/fresh_depends_on/charge/stepName×1"}, ThreadFailed, 2, 3, 0, false},
		{"owner: the writer does not hold the owner role", order, []rstep{{name: "a", status: "success", roles: []string{"shop"}},
			{name: "b", status: "success", roles: []string{"shop"}}},
			[]string{"violated/unauthorized_owner/owner/b/role×1"}, ThreadFailed, 1, 2, 0, false},
		{"owner: a writer holding several roles is judged as the owner", order, []rstep{{name: "a", status: "success", roles: []string{"shop", "warehouse"}},
			{name: "b", status: "success", roles: []string{"shop", "warehouse"}}, {name: "c", status: "success", roles: []string{"warehouse", "shop"}}},
			nil, ThreadCompleted, 2, 3, 0, true},
		{"transition broken fails the thread; later steps add nothing", order, []rstep{{name: "a", status: "success", roles: []string{"shop"}},
			{name: "c", status: "success", roles: []string{"shop"}}, {name: "b", status: "success", roles: []string{"warehouse"}}},
			[]string{"violated/invalid_transition/transitions/c/stepName×1"}, ThreadFailed, 1, 2, 0, false},
		{"completed earlier: the later steps are refused as thread_closed", Contract{Name: "order", Version: 2, EntryPoints: []string{"a"},
			TerminalSteps: []string{"b"}, AllowMultipleTerminals: true,
			Steps:       []ContractStep{{Name: "a"}, {Name: "b"}, {Name: "c"}},
			Transitions: []Transition{{From: "a", To: []string{"b"}, CanRetry: true}, {From: "b", To: []string{"c"}, CanRetry: true}}},
			[]rstep{{name: "a", status: "success"}, {name: "b", status: "success"}, {name: "c", status: "success"}, {name: "c", status: "success", key: "c2"}},
			[]string{"refused/thread_closed//c/×2"}, ThreadCompleted, 1, 2, 2, false},
		{"retry: a failed attempt then a success is a warning", order, []rstep{{name: "a", status: "failed", roles: []string{"shop"}},
			{name: "a", status: "success", roles: []string{"shop"}}},
			[]string{"warning/retry_attempted/max_retries/a/×1"}, "", -1, 2, 0, true},
		{"undocumented step", order, []rstep{{name: "zzz", status: "success"}},
			[]string{"violated/invalid_transition/undocumented_step/zzz/stepName×1"}, ThreadFailed, 0, 1, 0, false},
		{"failed report judged on what it carries only", pay, []rstep{approval,
			{name: "charge", status: "failed", ctx: map[string]string{"currency": "EUR"}, roles: proc, key: "c1"}}, nil, "", -1, 2, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := ReplayThread(tt.c, replayInput(start, tt.steps...))
			if got := findingKeys(v); !reflect.DeepEqual(got, tt.findings) {
				t.Errorf("findings %q, want %q", got, tt.findings)
			}
			if v.Ended != tt.ended || v.EndedAt != tt.endedAt {
				t.Errorf("ended %q at %d, want %q at %d", v.Ended, v.EndedAt, tt.ended, tt.endedAt)
			}
			if v.Judged != tt.judged || v.StepsRefused != tt.refused {
				t.Errorf("judged %d refused %d, want %d %d", v.Judged, v.StepsRefused, tt.judged, tt.refused)
			}
			if v.Passes() != tt.passes {
				t.Errorf("passes %v", v.Passes())
			}
		})
	}
}

// A reference reads the latest accepted success of the step it names: a
// refused later success does not replace it.
func TestReplayReferencesReadAcceptedSuccesses(t *testing.T) {
	t.Parallel()
	c := Contract{Name: "ship", Version: 1, FreeOrder: true, EntryPoints: []string{"ship"}, TerminalSteps: []string{"deliver"},
		Steps: []ContractStep{
			{Name: "ship", Required: []string{"tracking"}, ContentRules: []ContentRule{{Field: "tracking", Operator: OpMatches, Value: `^T\d+$`}}},
			{Name: "deliver", DependsOn: []string{"ship"}, Required: []string{"tracking"},
				ContentRules: []ContentRule{{Field: "tracking", Operator: OpEquals, Reference: &StepFieldRef{Step: "ship", Field: "tracking"}}}},
		}}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	in := replayInput(start,
		rstep{name: "ship", status: "success", key: "s1", ctx: map[string]string{"tracking": "T1"}},
		rstep{name: "ship", status: "success", key: "s2", ctx: map[string]string{"tracking": "bad"}}, // refused
		rstep{name: "deliver", status: "success", ctx: map[string]string{"tracking": "T1"}})
	v := ReplayThread(c, in)
	if got := findingKeys(v); !reflect.DeepEqual(got, []string{"refused/content_rule_failed/matches/ship/tracking×1"}) {
		t.Fatalf("findings %q", got)
	}
	if v.Ended != ThreadCompleted {
		t.Fatalf("ended %q", v.Ended)
	}
	in.Steps[2].Context["tracking"] = "T2"
	v = ReplayThread(c, in)
	if got := findingKeys(v); len(got) != 2 || got[1] != "refused/content_rule_failed/equals/deliver/tracking×1" {
		t.Fatalf("findings %q", got)
	}
}

func TestReplayTally(t *testing.T) {
	t.Parallel()
	refusedGT := ReplayFinding{Outcome: ReplayRefused, Type: ReplayContentRuleFailed, Rule: "gt", Step: "charge", Field: "amount", Message: "m1", Steps: 2}
	owner := ReplayFinding{Outcome: ReplayViolated, Type: IssueUnauthorizedOwner, Rule: RuleOwner, Step: "b", Field: "role", Message: "m2", Steps: 1}
	warn := ReplayFinding{Outcome: ReplayWarned, Type: IssueRetryAttempted, Rule: RuleMaxRetries, Step: "a", Message: "m3", Steps: 1}
	tl := NewReplayTally(2)
	tl.Add("t1", false, ReplayVerdict{Findings: []ReplayFinding{refusedGT}, Judged: 3, StepsRefused: 2})
	tl.Add("t2", true, ReplayVerdict{Findings: []ReplayFinding{refusedGT, owner}, Judged: 2, StepsRefused: 1})
	tl.Add("t3", true, ReplayVerdict{Findings: []ReplayFinding{warn}, Judged: 2})
	tl.Add("t4", false, ReplayVerdict{Judged: 1, SemanticUnjudged: 1})
	tl.Add("t5", false, ReplayVerdict{Findings: []ReplayFinding{refusedGT}, Judged: 1, StepsRefused: 1})
	got := []int{tl.Threads, tl.Refused, tl.Violated, tl.Warned, tl.Passed, tl.RecordedViolated, tl.NowPass, tl.NewlyFailing,
		tl.StepsJudged, tl.StepsRefused, tl.SemanticUnjudged}
	if want := []int{5, 3, 1, 1, 2, 2, 1, 2, 9, 4, 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	if !reflect.DeepEqual(tl.NowPassExamples, []string{"t3"}) || !reflect.DeepEqual(tl.NewlyFailingExamples, []string{"t1", "t5"}) {
		t.Fatalf("examples %v %v", tl.NowPassExamples, tl.NewlyFailingExamples)
	}
	rules := tl.Rules()
	if len(rules) != 3 || rules[0].Type != ReplayContentRuleFailed || rules[0].Threads != 3 || rules[0].Steps != 6 ||
		!reflect.DeepEqual(rules[0].Examples, []string{"t1", "t2"}) || rules[1].Outcome != ReplayViolated || rules[2].Outcome != ReplayWarned {
		t.Fatalf("rules %+v", rules)
	}
	// Past MaxReplayRules findings are counted, not listed.
	big := NewReplayTally(1)
	for i := 0; i < MaxReplayRules+3; i++ {
		f := owner
		f.Step = "s" + string(rune('A'+i%26)) + string(rune('A'+i/26))
		big.Add("t", false, ReplayVerdict{Findings: []ReplayFinding{f, f}})
	}
	if len(big.Rules()) != MaxReplayRules || big.RulesOmitted != 3 {
		t.Fatalf("%d rules, %d omitted", len(big.Rules()), big.RulesOmitted)
	}
}
