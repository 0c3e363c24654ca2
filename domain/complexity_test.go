package domain

import (
	"testing"
	"time"
)

func leaf(parent, name string) CostField { return CostField{Parent: parent, Name: name} }

func leaves(parent string, names ...string) []CostField {
	out := make([]CostField, len(names))
	for i, n := range names {
		out[i] = leaf(parent, n)
	}
	return out
}

func set(fields ...CostField) *CostSet { return &CostSet{Fields: fields} }

func intp(v int) *int { return &v }

func TestPageSizeEffective(t *testing.T) {
	t.Parallel()
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

func threadsField(ints map[string]int, children ...CostField) CostField {
	return CostField{Parent: "Query", Name: "threads", Ints: ints, Children: set(
		CostField{Parent: "ThreadConnection", Name: "threads", List: true, Children: set(children...)})}
}

func stepsField(children ...CostField) CostField {
	return CostField{Parent: "Thread", Name: "steps", List: true, Children: set(children...)}
}

func historyField(ints map[string]int, children ...CostField) CostField {
	return CostField{Parent: "StepStateInfo", Name: "history", List: true, Ints: ints, Children: set(children...)}
}

func TestQueryCost(t *testing.T) {
	t.Parallel()
	m := QueryCostModel
	cases := []struct {
		name   string
		fields []CostField
		want   int
	}{
		{"one scalar", leaves("Query", "__typename"), 1},
		{"object with scalars", []CostField{{Parent: "Query", Name: "thread", Children: set(leaves("Thread", "id", "status")...)}}, 3},
		{"connection sized by the parent's limit", []CostField{threadsField(map[string]int{"limit": 10}, leaf("Thread", "id"))}, 1 + 1 + 10},
		{"connection default 50", []CostField{threadsField(nil, leaf("Thread", "id"))}, 1 + 1 + 50},
		{"connection clamped to 100", []CostField{threadsField(map[string]int{"limit": 1000}, leaf("Thread", "id"))}, 1 + 1 + 100},
		{"non-positive limit means default", []CostField{threadsField(map[string]int{"limit": 0}, leaf("Thread", "id"))}, 1 + 1 + 50},
		{"steps are one item until the thread is read", []CostField{threadsField(map[string]int{"limit": 10}, stepsField(leaf("StepStateInfo", "stepName")))}, 1 + 1 + 10*(1+1*1)},
		{"history too", []CostField{threadsField(map[string]int{"limit": 10},
			stepsField(historyField(map[string]int{"limit": 5}, leaf("StepHistory", "attempt"))))}, 1 + 1 + 10*(1+1*(1+1*1))},
		{"list of scalars costs 1", []CostField{{Parent: "Graph", Name: "entryPoints", List: true}}, 1},
		{"input object argument", []CostField{{Parent: "Query", Name: "validationResults", List: true,
			Ints: map[string]int{"limit": 4}, Children: set(leaves("ValidationResultInfo", "validationId")...)}}, 1 + 4},
		{"unknown list uses the default size", []CostField{{Parent: "X", Name: "y", List: true, Children: set(leaves("Y", "a", "b")...)}}, 1 + 10*2},
		{"step history at 999", []CostField{{Parent: "Query", Name: "stepHistory", List: true, Ints: map[string]int{"limit": 998},
			Children: set(leaves("StepHistory", "attempt")...)}}, 999},
		{"siblings add", append(leaves("Query", "__typename", "__typename"),
			CostField{Parent: "Query", Name: "threadChain", List: true, Children: set(leaves("Thread", "id")...)}), 2 + 1 + 50},
		{"nested chain threads are charged their upper bounds", []CostField{{Parent: "Query", Name: "thread", Children: set(
			CostField{Parent: "Thread", Name: "threadChain", List: true, Children: set(stepsField(leaf("StepStateInfo", "stepName")))})}},
			1 + 1 + 50*(1+100*1)},
		{"verification costs a point per thread", []CostField{{Parent: "Query", Name: "thread", Children: set(
			leaf("Thread", "hashChainVerified"), leaf("Thread", "hashChainStatus"), stepsField(leaf("StepStateInfo", "verified")))}},
			1 + 1 + 1 + (1 + 1) + 1},
	}
	for _, c := range cases {
		if got := m.Price(set(c.fields...), nil); got != c.want {
			t.Errorf("%s: cost %d, want %d", c.name, got, c.want)
		}
	}
}

// Once the root fields have read their threads, data-dependent lists are
// charged by each thread's step count.
func TestPriceWithThreadsRead(t *testing.T) {
	t.Parallel()
	m := QueryCostModel
	one := func(f CostField, steps ...int) (int, int) {
		root := set(f)
		return m.Price(root, nil), m.Price(root, ThreadsRead{&root.Fields[0]: steps})
	}
	thread := func(children ...CostField) CostField {
		return CostField{Parent: "Query", Name: "thread", Children: set(children...)}
	}
	cases := []struct {
		name           string
		f              CostField
		steps          []int
		static, priced int
	}{
		{"steps by count", thread(stepsField(leaf("StepStateInfo", "stepName"))), []int{40}, 3, 2 + 40},
		{"steps capped at 100", thread(stepsField(leaf("StepStateInfo", "stepName"))), []int{8900}, 3, 2 + 100},
		{"a thread without steps is charged one", thread(stepsField(leaf("StepStateInfo", "stepName"))), []int{0}, 3, 3},
		{"a missing thread adds nothing", thread(stepsField(leaf("StepStateInfo", "stepName"))), nil, 3, 3},
		{"a step identity is one step", thread(CostField{Parent: "Thread", Name: "steps", List: true,
			Given: []string{"stepName", "idempotencyKey"}, Children: set(leaf("StepStateInfo", "stepName"))}), []int{90}, 3, 3},
		// 30 steps over 10 identities: history(limit: 50) holds 3 per step on average.
		{"history shares the thread's steps", thread(CostField{Parent: "Thread", Name: "steps", List: true, Children: set(
			historyField(map[string]int{"limit": 50}, leaf("StepHistory", "attempt")))}), []int{30}, 4, 2 + 30*(1+1)},
		{"history under one identity may hold every step", thread(CostField{Parent: "Thread", Name: "steps", List: true,
			Given: []string{"stepName", "idempotencyKey"}, Children: set(historyField(map[string]int{"limit": 50}, leaf("StepHistory", "attempt")))}),
			[]int{30}, 4, 2 + 1*(1+30)},
		// A list read while pricing is charged what it returned, never more
		// than its sizing allows.
		{"steps read while pricing", thread(CostField{Parent: "Thread", Name: "steps", List: true, Returned: intp(3),
			Given: []string{"stepName"}, Children: set(leaf("StepStateInfo", "stepName"))}), []int{101}, 3, 2 + 3},
		{"steps read while pricing, none returned", thread(CostField{Parent: "Thread", Name: "steps", List: true, Returned: intp(0),
			Children: set(leaf("StepStateInfo", "stepName"))}), []int{101}, 3, 3},
		{"steps read while pricing, capped by the count", thread(CostField{Parent: "Thread", Name: "steps", List: true, Returned: intp(500),
			Children: set(leaf("StepStateInfo", "stepName"))}), []int{40}, 3, 2 + 40},
		{"validation results by count", thread(CostField{Parent: "Thread", Name: "validationResults", List: true,
			Ints: map[string]int{"options.limit": 50}, Children: set(leaf("ValidationResultInfo", "validationId"))}), []int{3}, 3, 2 + 3},
		{"verification by step count", thread(leaf("Thread", "hashChainVerified")), []int{8900}, 3, 2 + 890},
		{"verifyThreadIntegrity by step count", CostField{Parent: "Query", Name: "verifyThreadIntegrity",
			Children: set(leaf("HashChainStatus", "verified"))}, []int{8900}, 3, 1 + 890 + 1},
		{"a page charges each thread read", threadsField(map[string]int{"limit": 10}, stepsField(leaf("StepStateInfo", "stepName"))),
			[]int{5, 1, 100}, 2 + 10*2, 2 + 10*2 + 4 + 0 + 99},
		{"chains too", CostField{Parent: "Query", Name: "threadChain", List: true, Children: set(stepsField(leaf("StepStateInfo", "stepName")))},
			[]int{3, 3}, 1 + 50*2, 1 + 50*2 + 2 + 2},
	}
	for _, c := range cases {
		static, priced := one(c.f, c.steps...)
		if static != c.static || priced != c.priced {
			t.Errorf("%s: static %d priced %d, want %d and %d", c.name, static, priced, c.static, c.priced)
		}
	}
}

func TestCheckLimit(t *testing.T) {
	t.Parallel()
	hist := func(limit int) *CostSet {
		return set(CostField{Parent: "Query", Name: "stepHistory", List: true, Ints: map[string]int{"limit": limit},
			Children: set(leaves("StepHistory", "attempt")...)})
	}
	for _, c := range []struct {
		limit, cost int
		ok          bool
	}{{998, 999, true}, {999, 1000, true}, {1000, 1001, false}} {
		cost := QueryCostModel.Price(hist(c.limit), nil)
		err := QueryCostModel.Check(cost)
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
	t.Parallel()
	// Lists nested 40 deep at 1000 items each would overflow int64.
	f := historyField(map[string]int{"limit": 1000}, leaf("StepHistory", "attempt"))
	for i := 0; i < 40; i++ {
		f = CostField{Parent: "X", Name: "y", List: true, Children: set(f)}
	}
	if got := QueryCostModel.Price(set(f, f), nil); got != costCeiling {
		t.Fatalf("cost %d, want the ceiling %d", got, costCeiling)
	}
}

// A fragment spreading the next one twice, 200 deep, expands 2^200 times:
// priced once per set, it saturates at once.
func TestFragmentDiamondIsLinear(t *testing.T) {
	t.Parallel()
	next := set(leaf("Thread", "id"))
	for i := 0; i < 200; i++ {
		next = &CostSet{Sets: []*CostSet{next, next}, Shared: true}
	}
	root := set(CostField{Parent: "Query", Name: "thread", Children: next})
	start := time.Now()
	if got := QueryCostModel.Price(root, nil); got != costCeiling {
		t.Fatalf("cost %d", got)
	}
	// Expanded, 2^200 sets would never finish: the bound only turns that
	// into a failure, however busy the machine.
	if d := time.Since(start); d > time.Minute {
		t.Fatalf("pricing took %v", d)
	}
}

// The SDKs' heaviest query, GetCompleteThread with its defaults (history 50,
// validations 10), on a thread of n recorded steps, each its own identity.
func TestGetCompleteThread(t *testing.T) {
	t.Parallel()
	thread := leaves("Thread", "id", "contractId", "contractName", "contractVersion", "ownerId", "companyId", "status",
		"lastHash", "startedAt", "completedAt", "error", "refs")
	step := leaves("StepStateInfo", "threadId", "stepName", "idempotencyKey", "status", "retryCount", "firstSeenAt",
		"lastUpdatedAt", "latestStepID", "previousStep", "verified", "verificationError")
	hist := leaves("StepHistory", "attempt", "timestamp", "status", "context", "duration", "error")
	val := append(leaves("ValidationResultInfo", "validationId", "threadId", "stepId", "stepName", "idempotencyKey", "timestamp",
		"overallStatus", "hasCriticalViolation", "criticalCount", "warningCount", "minorCount", "infoCount", "totalValidations"),
		CostField{Parent: "ValidationResultInfo", Name: "validations", List: true,
			Children: set(leaves("ValidationIssue", "type", "message", "field", "expected", "actual", "rule")...)})
	children := append(thread,
		CostField{Parent: "Thread", Name: "steps", List: true, Children: set(append(step,
			historyField(map[string]int{"limit": 50}, hist...))...)},
		CostField{Parent: "Thread", Name: "validationResults", List: true, Ints: map[string]int{"options.limit": 10}, Children: set(val...)})
	root := set(CostField{Parent: "Query", Name: "thread", Children: set(children...)})
	price := func(n int) int { return QueryCostModel.Price(root, ThreadsRead{&root.Fields[0]: {n}}) }
	// 1 + 12 + (1 + S·(11 + 1 + H·6)) + (1 + V·(13 + 1 + 3·6)) + verification
	for n, want := range map[int]int{
		3:   1 + 12 + (1 + 3*(12+1*6)) + (1 + 3*32) + 1,
		20:  1 + 12 + (1 + 20*(12+1*6)) + (1 + 10*32) + 2,
		100: 1 + 12 + (1 + 100*(12+1*6)) + (1 + 10*32) + 10,
	} {
		if got := price(n); got != want {
			t.Errorf("%d steps: cost %d, want %d", n, got, want)
		}
	}
	if price(3) > MaxQueryComplexity || price(100) <= MaxQueryComplexity {
		t.Fatal("a short thread must fit and a 100-step one must not")
	}
}

// PriceStatic says whether reading the threads could change the price.
func TestReadsMatter(t *testing.T) {
	thread := func(children ...CostField) *CostSet {
		return set(CostField{Parent: "Query", Name: "thread", Children: set(children...)})
	}
	for _, c := range []struct {
		name string
		root *CostSet
		want bool
	}{
		{"scalars only", thread(leaves("Thread", "id", "status")...), false},
		{"steps", thread(stepsField(leaf("StepStateInfo", "stepName"))), true},
		{"one step identity", thread(CostField{Parent: "Thread", Name: "steps", List: true,
			Given: []string{"stepName", "idempotencyKey"}, Children: set(leaf("StepStateInfo", "stepName"))}), false},
		{"verification", thread(leaf("Thread", "hashChainVerified")), true},
		{"verifyThreadIntegrity", set(CostField{Parent: "Query", Name: "verifyThreadIntegrity", Children: set(leaf("HashChainStatus", "verified"))}), true},
		{"stepHistory", set(CostField{Parent: "Query", Name: "stepHistory", List: true, Children: set(leaf("StepHistory", "attempt"))}), false},
		{"nested chain threads are not read", thread(CostField{Parent: "Thread", Name: "threadChain", List: true,
			Children: set(stepsField(leaf("StepStateInfo", "stepName")))}), false},
	} {
		if _, got := QueryCostModel.PriceStatic(c.root); got != c.want {
			t.Errorf("%s: reads matter %v, want %v", c.name, got, c.want)
		}
	}
}

// Introspection is charged a point per ten values.
func TestPerPoint(t *testing.T) {
	root := set(CostField{Parent: "Query", Name: "__schema", Children: set(
		CostField{Parent: "__Schema", Name: "types", List: true, Children: set(leaves("__Type", "name", "kind")...)})})
	// 1 + 1 + 10·2 = 22 values → 3 points.
	if got := QueryCostModel.Price(root, nil); got != 3 {
		t.Fatalf("cost %d", got)
	}
}
