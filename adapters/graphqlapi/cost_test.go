package graphqlapi

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/graphqlapi/graphqltest"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/domain"
)

// Every read the Node, Go and Python SDKs send with their default arguments
// is accepted on a short thread; on a thread of 100 steps each costs what it
// reads, and a refusal says how to page.
func TestSDKReadsCostWhatTheyRead(t *testing.T) {
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			f := newFixture(t, d)
			short := f.seed(t, "short", 3)
			long := f.seed(t, "long", 100)
			cases := func(s graphqltest.Seeded) []graphqltest.SDKCase {
				return append(graphqltest.SDKCases(s.ID, s.StepName, s.StepKey, s.RefKey, s.RefValue),
					graphqltest.PythonCases(s.ID, s.StepName, s.StepKey, s.RefKey, s.RefValue)...)
			}
			shortCost := map[string]float64{}
			for _, c := range cases(short) {
				r, status := f.exec(t, c.Query, c.Variables)
				cost, _ := r.Extensions["cost"].(float64)
				if status != http.StatusOK || len(r.Errors) > 0 || cost <= 0 || cost > domain.MaxQueryComplexity {
					t.Fatalf("%s on 3 steps: %d %+v", c.Name, status, r)
				}
				shortCost[c.Name] = cost
			}
			for _, c := range cases(long) {
				r, status := f.exec(t, c.Query, c.Variables)
				switch {
				case status == http.StatusOK && len(r.Errors) == 0:
					cost := r.Extensions["cost"].(float64)
					if cost < shortCost[c.Name] {
						t.Fatalf("%s costs %v on 100 steps, %v on 3", c.Name, cost, shortCost[c.Name])
					}
					t.Logf("%-32s 3 steps: %4v  101 steps: %4v", c.Name, shortCost[c.Name], cost)
				case status == http.StatusUnprocessableEntity:
					e := r.Errors[0]
					if e.Extensions["code"] != "COMPLEXITY_LIMIT_EXCEEDED" || !strings.Contains(e.Message, "stepHistory(") {
						t.Fatalf("%s on 100 steps: %+v", c.Name, r)
					}
					t.Logf("%-32s 3 steps: %4v  101 steps: %4v refused", c.Name, shortCost[c.Name], e.Extensions["complexity"])
				default:
					t.Fatalf("%s on 100 steps: %d %+v", c.Name, status, r)
				}
			}
			// The steps of the long thread are charged what they return.
			r, status := f.exec(t, `query($id: ID!) { thread(id: $id) { steps { stepName } } }`, map[string]any{"id": long.ID})
			if status != 200 || r.Extensions["cost"] != float64(2+100) || len(r.Data["thread"].(map[string]any)["steps"].([]any)) != 100 {
				t.Fatalf("steps: %d %v", status, r.Extensions)
			}
			r, _ = f.exec(t, `query($id: ID!) { thread(id: $id) { steps { stepName } } }`, map[string]any{"id": short.ID})
			if r.Extensions["cost"] != float64(2+4) { // 4 recorded steps: step-0 was retried
				t.Fatalf("short steps: %v", r.Extensions)
			}
			if n := f.h.misses.Load(); n != 0 {
				t.Fatalf("%d root reads were not priced", n)
			}
		})
	}
}

// Verification is priced by the thread's step count, so aliasing it does not
// multiply the work for free.
func TestVerificationPricedBySteps(t *testing.T) {
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			f := newFixture(t, d)
			s := f.seed(t, "v", 119) // 120 recorded steps: 12 points to verify
			one := fmt.Sprintf(`{ verifyThreadIntegrity(threadId: %q) { verified totalEvents } }`, s.ID)
			r, status := f.exec(t, one, nil)
			if status != 200 || r.Extensions["cost"] != float64(1+12+2) || r.Data["verifyThreadIntegrity"].(map[string]any)["verified"] != true {
				t.Fatalf("one: %d %+v", status, r)
			}
			aliases := func(n int) string {
				var b strings.Builder
				b.WriteString("{")
				for i := 0; i < n; i++ {
					fmt.Fprintf(&b, " v%d: verifyThreadIntegrity(threadId: %q) { verified }", i, s.ID)
				}
				return b.String() + " }"
			}
			// 400 aliases are refused on their static price already; 80 once
			// the thread's step count is read, before verifying anything.
			f.statements.Store(0)
			r, status = f.exec(t, aliases(400), nil)
			if status != http.StatusUnprocessableEntity || r.Errors[0].Extensions["complexity"] != float64(400*3) || f.statements.Load() != 0 {
				t.Fatalf("400 aliases: %d %+v", status, r)
			}
			r, status = f.exec(t, aliases(80), nil)
			if status != http.StatusUnprocessableEntity || r.Errors[0].Extensions["complexity"] != float64(80*(1+12+1)) {
				t.Fatalf("80 aliases: %d %+v", status, r)
			}
			if n := f.statements.Load(); n != 1 { // counted, not timed: a busy machine changes nothing
				t.Fatalf("80 aliases: %d statements", n)
			}
			// hashChainVerified through a thread, and per step.
			r, status = f.exec(t, `query($id: ID!) { thread(id: $id) { hashChainVerified steps { verified } } }`, map[string]any{"id": s.ID})
			if status != 200 || r.Extensions["cost"] != float64(1+1+1+100*1+12) {
				t.Fatalf("hashChainVerified: %d %+v", status, r.Extensions)
			}
		})
	}
}

// Threads reached through threadChain are not read before execution; the
// request's verification budget bounds their verification.
func TestVerificationBudget(t *testing.T) {
	f := newFixture(t, sqldb.SQLite)
	parent := f.seed(t, "p", 3)
	child := f.seed(t, "c", 3)
	if err := graphqltest.Link(f.ctx, f.threads, parent.ID, child.ID); err != nil {
		t.Fatal(err)
	}
	q := `query($id: ID!) { thread(id: $id) { threadChain { id hashChainVerified } } }`
	r, status := f.exec(t, q, map[string]any{"id": parent.ID})
	if status != 200 || len(r.Errors) > 0 {
		t.Fatalf("%d %+v", status, r)
	}
	f.h.verifyBudget = 5 // the chain holds 8 recorded steps
	r, status = f.exec(t, q, map[string]any{"id": parent.ID})
	if status != 200 || len(r.Errors) == 0 || r.Errors[0].Extensions["code"] != "COMPLEXITY_LIMIT_EXCEEDED" ||
		!strings.Contains(r.Errors[0].Message, "verifyThreadIntegrity") {
		t.Fatalf("over budget: %d %+v", status, r)
	}
}

// Introspection is priced by what it returns: the explorer's schema query
// fits, fifty aliased copies of it do not.
func TestIntrospectionPriced(t *testing.T) {
	h := testHandler(t)
	q := regexp.MustCompile(`const q = "([^"]+)"`).FindSubmatch(explorerHTML)
	if q == nil {
		t.Fatal("explorer query not found")
	}
	explorer := string(q[1])
	cost, err := h.Cost(Request{Query: explorer})
	if err != nil || cost > domain.MaxQueryComplexity || cost < 100 {
		t.Fatalf("explorer introspection: %d %v", cost, err)
	}
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < 50; i++ {
		fmt.Fprintf(&b, " s%d: __schema { types { name fields { name } } }", i)
	}
	b.WriteString(" }")
	if cost, _ := h.Cost(Request{Query: b.String()}); cost <= domain.MaxQueryComplexity {
		t.Fatalf("50 aliased __schema cost %d", cost)
	}
	t.Logf("explorer introspection %d", cost)
}

// The fragment diamond is refused in time linear in the document, through
// Execute like every transport.
func TestFragmentDiamondRefused(t *testing.T) {
	f := newFixture(t, sqldb.SQLite)
	for _, n := range []int{20, 40, 1000} {
		start := time.Now()
		r, status := f.exec(t, graphqltest.Diamond(n), map[string]any{"id": "t"})
		if status != http.StatusUnprocessableEntity || r.Errors[0].Extensions["code"] != "COMPLEXITY_LIMIT_EXCEEDED" {
			t.Fatalf("%d: %d %+v", n, status, r)
		}
		// Expanded, 2^1000 selections would never finish: the bound only
		// turns that into a failure, however busy the machine.
		if d := time.Since(start); d > time.Minute {
			t.Fatalf("%d fragments took %v", n, d)
		}
	}
	// Cycles and too-deep diamonds are refused as invalid, also at once.
	r, status := f.exec(t, `{ thread(id: "t") { ...A } } fragment A on Thread { ...B } fragment B on Thread { id ...A }`, nil)
	if status != http.StatusUnprocessableEntity || r.Errors[0].Extensions["code"] != CodeValidationFailed {
		t.Fatalf("cycle: %d %+v", status, r)
	}
}
