package domain

import "sort"

// Bounds on what a replay tally keeps, so its answer stays small whatever
// the threads hold.
const (
	// MaxReplayRules bounds the distinct findings listed; past it threads
	// are still counted, and RulesOmitted says how many findings were not
	// listed.
	MaxReplayRules = 200
	// DefaultReplayExamples is how many example threads a finding keeps.
	DefaultReplayExamples = 5
)

// ReplayRule is one finding counted over threads: its Message is the first
// thread's, its Steps the steps of every thread it concerned.
type ReplayRule struct {
	ReplayFinding
	// Threads counts the threads it concerned.
	Threads int `json:"threads"`
	// Examples are the first threads it concerned (newest first when
	// threads are added newest first).
	Examples []string `json:"examples"`
}

// ReplayTally adds up verdicts. The counts are of threads: a thread is
// counted once under Refused when the draft would refuse any of its steps,
// once under Violated when it would fail it, and so on.
type ReplayTally struct {
	Threads  int
	Refused  int
	Violated int
	// Warned: warnings only (neither refused nor violated).
	Warned int
	// Passed: neither refused nor violated (warnings allowed).
	Passed int
	// RecordedViolated counts the threads recorded as violated under the
	// version they ran on; NowPass those of them the draft would pass, and
	// NewlyFailing the threads not recorded as violated that the draft
	// would refuse or fail.
	RecordedViolated     int
	NowPass              int
	NewlyFailing         int
	NowPassExamples      []string
	NewlyFailingExamples []string
	// StepsJudged, StepsRefused and SemanticUnjudged add up the verdicts'.
	StepsJudged      int
	StepsRefused     int
	SemanticUnjudged int
	// RulesOmitted counts findings not listed past MaxReplayRules.
	RulesOmitted int

	examples int
	rules    []ReplayRule
	index    map[ReplayKey]int
	omitted  map[ReplayKey]bool
}

// NewReplayTally keeps up to examples thread ids per finding (0: the
// default).
func NewReplayTally(examples int) *ReplayTally {
	if examples <= 0 {
		examples = DefaultReplayExamples
	}
	return &ReplayTally{examples: examples, index: map[ReplayKey]int{}, omitted: map[ReplayKey]bool{}}
}

// Add counts one thread's verdict; recordedViolated says whether it was
// recorded as violated under the version it ran on.
func (t *ReplayTally) Add(threadID string, recordedViolated bool, v ReplayVerdict) {
	t.Threads++
	t.StepsJudged += v.Judged
	t.StepsRefused += v.StepsRefused
	t.SemanticUnjudged += v.SemanticUnjudged
	refused, violated := v.Has(ReplayRefused), v.Has(ReplayViolated)
	switch {
	case refused || violated:
		if refused {
			t.Refused++
		}
		if violated {
			t.Violated++
		}
	case v.Has(ReplayWarned):
		t.Warned++
		t.Passed++
	default:
		t.Passed++
	}
	if recordedViolated {
		t.RecordedViolated++
		if v.Passes() {
			t.NowPass++
			t.NowPassExamples = t.example(t.NowPassExamples, threadID)
		}
	} else if !v.Passes() {
		t.NewlyFailing++
		t.NewlyFailingExamples = t.example(t.NewlyFailingExamples, threadID)
	}
	for _, f := range v.Findings {
		k := f.Key()
		i, ok := t.index[k]
		if !ok {
			if len(t.rules) >= MaxReplayRules {
				if !t.omitted[k] {
					t.omitted[k] = true
					t.RulesOmitted++
				}
				continue
			}
			i = len(t.rules)
			t.index[k] = i
			first := f
			first.Steps = 0
			t.rules = append(t.rules, ReplayRule{ReplayFinding: first, Examples: []string{}})
		}
		r := &t.rules[i]
		r.Threads++
		r.Steps += f.Steps
		r.Examples = t.example(r.Examples, threadID)
	}
}

func (t *ReplayTally) example(l []string, id string) []string {
	if len(l) < t.examples {
		return append(l, id)
	}
	return l
}

// Rules lists the findings: refusals, then violations, then warnings, each
// by threads concerned (most first), then by step, type, rule and field.
func (t *ReplayTally) Rules() []ReplayRule {
	out := append([]ReplayRule(nil), t.rules...)
	rank := map[ReplayOutcome]int{ReplayRefused: 0, ReplayViolated: 1, ReplayWarned: 2}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case rank[a.Outcome] != rank[b.Outcome]:
			return rank[a.Outcome] < rank[b.Outcome]
		case a.Threads != b.Threads:
			return a.Threads > b.Threads
		case a.Step != b.Step:
			return a.Step < b.Step
		case a.Type != b.Type:
			return a.Type < b.Type
		case a.Rule != b.Rule:
			return a.Rule < b.Rule
		}
		return a.Field < b.Field
	})
	if out == nil {
		out = []ReplayRule{}
	}
	return out
}
