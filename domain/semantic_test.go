package domain

import (
	"strings"
	"testing"
	"time"
)

func TestSemanticStateAndVerdict(t *testing.T) {
	t.Parallel()
	q := SemanticQuestion{Rule: SemanticRule{Field: "note", Question: "Is it polite?", ContextSteps: []string{"order"}}, Value: "thanks"}
	f, v := SemanticState(q, map[string]map[string]string{"order": {"item": "book"}, "other": {"x": "y"}})
	if v != nil || f.Candidate["note"] != "thanks" || len(f.SuccessfulSteps) != 1 || f.SuccessfulSteps["order"]["item"] != "book" {
		t.Fatalf("facts %+v %v", f, v)
	}
	big := map[string]string{}
	for i := 0; i <= MaxSemanticContextFields; i++ {
		big[strings.Repeat("f", i+1)] = "v"
	}
	for name, validated := range map[string]map[string]map[string]string{
		"no success":  nil,
		"many fields": {"order": big},
		"long value":  {"order": {"k": strings.Repeat("v", MaxSemanticContextValueLen+1)}},
		"long name":   {"order": {strings.Repeat("k", MaxSemanticContextFieldLen+1): "v"}},
	} {
		if _, v := SemanticState(q, validated); v == nil || v.Rule != "semantic" || !strings.Contains(v.Message, `validated context for "order"`) {
			t.Errorf("%s: %v", name, v)
		}
	}

	tests := []struct {
		label    string
		p, min   float64
		answered bool
		ok       bool
	}{
		{"yes", 0.9, 0, true, true},
		{"yes", 0.8, 0, true, true},
		{"yes", 0.79, 0, true, false},
		{"no", 0.9, 0, true, false},
		{"no", 0.1, 0, true, true},     // P(yes) = 0.9
		{"no", 0.3, 0.75, true, false}, // P(yes) = 0.7
		{"yes", 0.95, 0.95, true, true},
		{"maybe", 0.99, 0, false, false},
	}
	for _, tc := range tests {
		qq := q
		qq.Rule.MinProbability = tc.min
		answered, v := SemanticVerdict(qq, tc.label, tc.p)
		if answered != tc.answered || (answered && (v == nil) != tc.ok) {
			t.Errorf("%s %.2f (min %.2f): answered %v, violation %v", tc.label, tc.p, tc.min, answered, v)
		}
		if v != nil && v.Message != `semantic field "note" did not satisfy its contract rule` {
			t.Errorf("message %q", v.Message)
		}
	}
	if CodeOf(ErrNoClassifier("s")) != CodeClassifierUnavailable || CodeOf(ErrClassifierFailed("s", "x")) != CodeClassifierUnavailable ||
		Public(ErrNoClassifier("s")).Status != 503 {
		t.Fatal("classifier errors are not classifier_unavailable (503)")
	}
}

func TestDecisionRolesAndSnapshot(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	past := now.Add(-time.Hour)
	th := Thread{ID: "t1", OwnerID: "p1", Status: ThreadActive, CreatedAt: past, Parties: []Party{
		{PrincipalID: "p1", Role: "shop", Level: AccessOwner},
		{PrincipalID: "p1", Role: "warehouse", Level: AccessParticipant},
		{PrincipalID: "p2", Role: "auditor", Level: AccessObserver},
		{PrincipalID: "p3", Role: "carrier", Level: AccessParticipant, ExpiresAt: &past},
		{PrincipalID: "p4", Role: "carrier", Level: AccessExternal},
	}}
	tests := []struct {
		principal string
		roles     []string
		code      Code
	}{
		{"p1", []string{"shop", "warehouse"}, ""},
		{"p4", []string{"carrier"}, ""},
		{"p2", nil, CodeInsufficientAccess},
		{"p3", nil, CodeGrantExpired},
		{"p9", nil, CodeNotAParty},
	}
	for _, tc := range tests {
		roles, err := th.DecisionRoles(Actor{PrincipalID: tc.principal}, now)
		if CodeOf(err) != tc.code || strings.Join(roles, ",") != strings.Join(tc.roles, ",") {
			t.Errorf("%s: %v %v, want %v %s", tc.principal, roles, err, tc.roles, tc.code)
		}
	}

	c := Contract{Name: "c", Version: 1, Steps: []ContractStep{{Name: "order", Required: []string{"id"}}, {Name: "pay"}}}
	h := []RecordedStep{{ID: "o1", Name: "order", Status: "success"}, {ID: "p1", Name: "pay", Status: "failed"}}
	ctxs := []map[string]string{{"id": "O-1", "extra": "x"}, {"amount": "1"}}
	d := NewDecisionThread(th, c, []string{"shop"}, h, ctxs, []StepGrant{{StepName: "pay", Consumed: "o1"}})
	if d.Snapshots["order"]["id"] != "O-1" || d.Snapshots["order"]["extra"] != "" || d.Snapshots["pay"] != nil {
		t.Errorf("snapshots %v: the latest success, registered fields only", d.Snapshots)
	}
	if d.Consumed["pay"]["o1"] {
		t.Errorf("a grant whose step then failed keeps nothing consumed: %v", d.Consumed)
	}
	d = NewDecisionThread(th, c, nil, h[:1], ctxs[:1], []StepGrant{{StepName: "pay", Consumed: "o1"}})
	if !d.Consumed["pay"]["o1"] || !d.StartedAt.Equal(past) {
		t.Errorf("consumed %v", d.Consumed)
	}

	sf := ShouldFacts(d, map[string]string{"threadify.x": "1", "otel_trace_id": "t", "order": "O-1"})
	if len(sf.Steps) != 1 || sf.Steps[0].Step != "order" || len(sf.Refs) != 1 || sf.Refs["order"] != "O-1" {
		t.Errorf("should facts %+v", sf)
	}
}

func TestSemanticQuestionsOfASubmission(t *testing.T) {
	t.Parallel()
	st := ContractStep{Name: "review", Required: []string{"note", "tone"}, SemanticRules: []SemanticRule{
		{Field: "note", Question: "Is it polite?"}, {Field: "tone", Question: "Is it calm?"}}}
	qs, vs := SemanticQuestions(st, StepStatusSuccess, map[string]string{"note": "thanks", "other": "x"})
	if len(qs) != 1 || qs[0].Value != "thanks" || len(vs) != 1 || vs[0].Field != "tone" || vs[0].Message != `semantic field "tone" is missing or too long` {
		t.Fatalf("success: %+v %+v", qs, vs)
	}
	if qs, vs := SemanticQuestions(st, StepStatusFailed, map[string]string{"note": "thanks"}); len(qs) != 1 || len(vs) != 0 {
		t.Fatalf("a failed report is asked only about what it carries: %+v %+v", qs, vs)
	}
	if _, vs := SemanticQuestions(st, StepStatusSuccess, map[string]string{"note": strings.Repeat("x", MaxSemanticValueBytes+1), "tone": "ok"}); len(vs) != 1 || vs[0].Field != "note" {
		t.Fatalf("too long: %+v", vs)
	}
}
