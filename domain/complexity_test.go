package domain

import "testing"

func leaf(parent, name string) CostField { return CostField{Parent: parent, Name: name} }

func leaves(parent string, names ...string) []CostField {
	out := make([]CostField, len(names))
	for i, n := range names {
		out[i] = leaf(parent, n)
	}
	return out
}

func TestPageSizeEffective(t *testing.T) {
	n := func(v int) *int { return &v }
	for _, c := range []struct {
		p    PageSize
		v    *int
		want int
	}{
		{ThreadsPage, nil, 50}, {ThreadsPage, n(0), 50}, {ThreadsPage, n(-5), 50}, {ThreadsPage, n(1), 1},
		{ThreadsPage, n(100), 100}, {ThreadsPage, n(101), 100}, {HistoryPage, nil, 100}, {HistoryPage, n(5000), 1000},
		{PageSize{Default: 2}, n(1 << 30), 1 << 30},
	} {
		if got := c.p.Effective(c.v); got != c.want {
			t.Errorf("%+v.Effective(%v) = %d, want %d", c.p, c.v, got, c.want)
		}
	}
}

func TestQueryCost(t *testing.T) {
	m := QueryCostModel
	threads := func(ints map[string]int, children ...CostField) CostField {
		return CostField{Parent: "Query", Name: "threads", Ints: ints, Children: []CostField{
			{Parent: "ThreadConnection", Name: "threads", List: true, Children: children}}}
	}
	steps := func(children ...CostField) CostField {
		return CostField{Parent: "Thread", Name: "steps", List: true, Children: children}
	}
	history := func(ints map[string]int, children ...CostField) CostField {
		return CostField{Parent: "StepStateInfo", Name: "history", List: true, Ints: ints, Children: children}
	}
	cases := []struct {
		name   string
		fields []CostField
		want   int
	}{
		{"one scalar", leaves("Query", "__typename"), 1},
		{"object with scalars", []CostField{{Parent: "Query", Name: "thread", Children: leaves("Thread", "id", "status")}}, 3},
		{"connection sized by the parent's limit", []CostField{threads(map[string]int{"limit": 10}, leaf("Thread", "id"))}, 1 + 1 + 10},
		{"connection default 50", []CostField{threads(nil, leaf("Thread", "id"))}, 1 + 1 + 50},
		{"connection clamped to 100", []CostField{threads(map[string]int{"limit": 1000}, leaf("Thread", "id"))}, 1 + 1 + 100},
		{"non-positive limit means default", []CostField{threads(map[string]int{"limit": 0}, leaf("Thread", "id"))}, 1 + 1 + 50},
		{"documented example", []CostField{threads(map[string]int{"limit": 10}, steps(leaf("StepStateInfo", "stepName")))}, 1 + 1 + 10*(1+2*1)},
		{"nested lists multiply", []CostField{threads(map[string]int{"limit": 10},
			steps(history(map[string]int{"limit": 5}, leaf("StepHistory", "attempt"))))}, 1 + 1 + 10*(1+2*(1+5*1))},
		{"list of scalars costs 1", []CostField{{Parent: "Graph", Name: "entryPoints", List: true}}, 1},
		{"input object argument", []CostField{{Parent: "Thread", Name: "validationResults", List: true,
			Ints: map[string]int{"options.limit": 4}, Children: leaves("ValidationResultInfo", "validationId")}}, 1 + 4},
		{"unknown list uses the default size", []CostField{{Parent: "X", Name: "y", List: true, Children: leaves("Y", "a", "b")}}, 1 + 10*2},
		{"introspection is flat", []CostField{{Parent: "Query", Name: "__schema", Children: []CostField{
			{Parent: "__Schema", Name: "types", List: true, Children: leaves("__Type", "name", "kind")}}}}, 4},
		{"step history at 999", []CostField{{Parent: "Query", Name: "stepHistory", List: true, Ints: map[string]int{"limit": 998},
			Children: leaves("StepHistory", "attempt")}}, 999},
		{"siblings add", append(leaves("Query", "__typename", "__typename"),
			CostField{Parent: "Query", Name: "threadChain", List: true, Children: leaves("Thread", "id")}), 2 + 1 + 50},
	}
	for _, c := range cases {
		if got := m.Cost(c.fields); got != c.want {
			t.Errorf("%s: cost %d, want %d", c.name, got, c.want)
		}
	}
}

func TestCheckLimit(t *testing.T) {
	hist := func(limit int) []CostField {
		return []CostField{{Parent: "Query", Name: "stepHistory", List: true, Ints: map[string]int{"limit": limit},
			Children: leaves("StepHistory", "attempt")}}
	}
	for _, c := range []struct {
		limit, cost int
		ok          bool
	}{{998, 999, true}, {999, 1000, true}, {1000, 1001, false}} {
		cost, err := QueryCostModel.Check(hist(c.limit))
		if cost != c.cost || (err == nil) != c.ok {
			t.Fatalf("limit %d: cost %d err %v", c.limit, cost, err)
		}
		if err != nil {
			e := AsError(err)
			if e.Kind != KindUnprocessable || e.Code != CodeComplexityLimitExceeded ||
				e.Message != "operation has complexity 1001, which exceeds the limit of 1000" ||
				e.Details["complexity"] != 1001 || e.Details["limit"] != 1000 {
				t.Fatalf("error %+v", e)
			}
		}
	}
}

func TestCostSaturates(t *testing.T) {
	// Lists nested 40 deep at 100 items each would overflow int64.
	f := CostField{Parent: "StepStateInfo", Name: "history", List: true, Ints: map[string]int{"limit": 1000},
		Children: leaves("StepHistory", "attempt")}
	for i := 0; i < 40; i++ {
		f = CostField{Parent: "StepStateInfo", Name: "history", List: true, Ints: map[string]int{"limit": 1000}, Children: []CostField{f}}
	}
	got := QueryCostModel.Cost([]CostField{f, f})
	if got != costCeiling {
		t.Fatalf("cost %d, want the ceiling %d", got, costCeiling)
	}
	if _, err := QueryCostModel.Check([]CostField{f}); err == nil {
		t.Fatal("saturated cost accepted")
	}
}

// The SDK's heaviest query, GetCompleteThread with its defaults (history 50,
// validations 10), must fit: this fixes Thread.steps' charged size at 2.
func TestGetCompleteThreadFits(t *testing.T) {
	thread := leaves("Thread", "id", "contractId", "contractName", "contractVersion", "ownerId", "companyId", "status",
		"lastHash", "startedAt", "completedAt", "error", "refs")
	step := leaves("StepStateInfo", "threadId", "stepName", "idempotencyKey", "status", "retryCount", "firstSeenAt",
		"lastUpdatedAt", "latestStepID", "previousStep", "verified", "verificationError")
	hist := leaves("StepHistory", "attempt", "timestamp", "status", "context", "duration", "error")
	val := append(leaves("ValidationResultInfo", "validationId", "threadId", "stepId", "stepName", "idempotencyKey", "timestamp",
		"overallStatus", "hasCriticalViolation", "criticalCount", "warningCount", "minorCount", "infoCount", "totalValidations"),
		CostField{Parent: "ValidationResultInfo", Name: "validations", List: true,
			Children: leaves("ValidationIssue", "type", "message", "field", "expected", "actual", "rule")})
	children := append(thread,
		CostField{Parent: "Thread", Name: "steps", List: true, Children: append(step,
			CostField{Parent: "StepStateInfo", Name: "history", List: true, Ints: map[string]int{"limit": 50}, Children: hist})},
		CostField{Parent: "Thread", Name: "validationResults", List: true, Ints: map[string]int{"options.limit": 10}, Children: val})
	got := QueryCostModel.Cost([]CostField{{Parent: "Query", Name: "thread", Children: children}})
	// 1 + 12 + (1 + 2*(11 + 1 + 50*6)) + (1 + 10*(13 + 1 + 3*6)) = 959
	if got != 959 {
		t.Fatalf("GetCompleteThread costs %d, want 959", got)
	}
}
