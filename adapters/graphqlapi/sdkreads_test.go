package graphqlapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/threadengine/engine/adapters/graphqlapi/graphqltest"
	"github.com/threadengine/engine/adapters/graphqlapi/sdkdocs"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
)

// The SDKs' documented reads at their documented sizes (issue 29): Node
// thread.steps() on a thread of 100 distinct steps, getThreadsByRef with a
// limit of 100, history with a limit of 1,000 on a step of 1,000 attempts,
// with each SDK's exact document. They are priced by the rows they return;
// the same selections sent as any other document keep the seed's rule
// (1 point per field, lists multiply) and are refused.
func TestSDKDocumentedReadsFit(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		f := newFixture(t, d)
		steps := f.seed(t, "hundred", 100) // step-0 … step-99
		for i := 0; i < 99; i++ {
			if _, err := f.threads.Application().Commands.StartThread.Handle(f.ctx, threadsapp.StartThreadInput{
				Refs: map[string]string{"orderId": "O-hundred"}}); err != nil {
				t.Fatal(err)
			}
		}
		retried, err := f.threads.Application().Commands.StartThread.Handle(f.ctx, threadsapp.StartThreadInput{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 1000; i++ {
			status := "failed"
			if i == 999 {
				status = "success"
			}
			if _, err := f.threads.Application().Commands.RecordStep.Handle(f.ctx, threadsapp.RecordStepInput{
				ThreadID: retried.ID, StepName: "charge", IdempotencyKey: "c1", Status: status,
				Context: map[string]string{"try": fmt.Sprint(i)}}); err != nil {
				t.Fatalf("attempt %d: %v", i, err)
			}
		}

		type read struct {
			name, doc string
			vars      map[string]any
			path      []string // to the list returned
			want      int
		}
		reads := []read{
			{"node steps()", sdkdocs.GetThreadSteps, map[string]any{"threadId": steps.ID, "stepName": nil, "idempotencyKey": nil, "status": nil},
				[]string{"thread", "steps"}, 100},
			{"python steps", sdkdocs.PyGetThreadSteps, map[string]any{"threadId": steps.ID}, []string{"thread", "steps"}, 100},
			{"node getThreadsByRef limit 100", sdkdocs.GetThreadsByRefNode, map[string]any{"refKey": "orderId", "refValue": "O-hundred",
				"status": nil, "startedAfter": nil, "startedBefore": nil, "limit": 100, "offset": 0}, []string{"threadsByRef", "threads"}, 100},
			{"go GetThreadsByRef limit 100", sdkdocs.GetThreadsByRefGo, map[string]any{"refKey": "orderId", "refValue": "O-hundred", "limit": 100},
				[]string{"threadsByRef", "threads"}, 100},
			{"python get_threads_by_ref limit 100", sdkdocs.PyGetThreadsByRef, map[string]any{"refKey": "orderId", "refValue": "O-hundred", "limit": 100, "offset": 0},
				[]string{"threadsByRef", "threads"}, 100},
			{"node history limit 1000", sdkdocs.GetStepHistory, map[string]any{"threadId": retried.ID, "stepName": "charge", "idempotencyKey": "c1",
				"limit": 1000, "offset": 0, "startAt": nil, "endAt": nil, "activityType": nil, "actor": nil}, []string{"stepHistory"}, 1000},
			{"go history limit 1000", sdkdocs.GetStepHistory, map[string]any{"threadId": retried.ID, "stepName": "charge", "limit": 1000},
				[]string{"stepHistory"}, 1000},
			{"python history limit 1000", sdkdocs.PyGetStepHistory, map[string]any{"threadId": retried.ID, "stepName": "charge", "idempotencyKey": "c1", "limit": 1000},
				[]string{"stepHistory"}, 1000},
		}
		for _, c := range reads {
			r, status := f.exec(t, c.doc, c.vars)
			if status != http.StatusOK || len(r.Errors) > 0 {
				t.Fatalf("%s: %d %+v", c.name, status, r.Errors)
			}
			var v any = r.Data
			for _, k := range c.path {
				v = v.(map[string]any)[k]
			}
			cost := r.Extensions["cost"].(float64)
			if n := len(v.([]any)); n != c.want || cost > domain.MaxQueryComplexity {
				t.Fatalf("%s: %d items (want %d), cost %v", c.name, n, c.want, cost)
			}
			t.Logf("%-36s %4d rows, cost %4v", c.name, c.want, cost)

			// The same read in a document of one's own: the seed's rule.
			own := withTypename(c.doc)
			r, status = f.exec(t, own, c.vars)
			if status != http.StatusUnprocessableEntity || r.Errors[0].Extensions["code"] != "COMPLEXITY_LIMIT_EXCEEDED" {
				t.Fatalf("%s as another document: %d %+v", c.name, status, r.Errors)
			}
		}
	})
}

// Canonical ignores what GraphQL ignores (whitespace, commas), so every
// SDK's indentation of a document is recognised, and nothing else is.
func TestSDKDocumentsRecognised(t *testing.T) {
	t.Parallel()
	for _, d := range sdkdocs.All {
		if !sdkdocs.Is(d) || !sdkdocs.Is(strings.ReplaceAll(d, " ", "\n\t ,")) {
			t.Fatalf("not recognised:\n%s", d)
		}
		if sdkdocs.Is(withTypename(d)) || sdkdocs.Is(d+" fragment F on Thread { id }") {
			t.Fatalf("a changed document recognised:\n%s", d)
		}
	}
	if !sdkdocs.Is(graphqltest.GetThreadSteps) {
		t.Fatal("graphqltest's documents are the SDKs'")
	}
}

// withTypename selects one more field in d's innermost selection.
func withTypename(d string) string {
	i := strings.LastIndex(d, "{")
	return d[:i+1] + " __typename " + d[i+1:]
}

// The SDKs' subSteps() of a step whose state carries no idempotency key
// sends idempotencyKey: null and selects the steps of that name: the list is
// read while pricing and charged the steps it returns (one on a thread of
// 100 distinct steps, not the thread's 100), so it fits; a name shared by
// three step identities is charged three.
func TestSDKSubStepsWithoutKeyFit(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		f := newFixture(t, d)
		s := f.seed(t, "subs", 100) // step-0 … step-99, each with sub-step sub-<i>
		for _, k := range []string{"k7b", "k7c"} {
			if _, err := f.threads.Application().Commands.RecordStep.Handle(f.ctx, threadsapp.RecordStepInput{
				ThreadID: s.ID, StepName: "step-7", IdempotencyKey: k, Status: "success", Context: map[string]string{"k": k},
				SubSteps: []threadsapp.SubStepInput{{Name: "sub-" + k, Status: "success"}}}); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			doc, step string
			steps     int
			cost      float64
		}{
			{sdkdocs.GetStepSubSteps, "step-42", 1, 1 + 1*(1+10)},
			{sdkdocs.PyGetStepSubSteps, "step-42", 1, 1 + 1*(1+10)},
			{sdkdocs.GetStepSubSteps, "step-7", 3, 1 + 3*(1+10)},
			{sdkdocs.GetStepSubSteps, "no-such-step", 0, 1 + 1*(1+10)},
		} {
			r, status := f.exec(t, c.doc, map[string]any{"threadId": s.ID, "stepName": c.step, "idempotencyKey": nil})
			if status != http.StatusOK || len(r.Errors) > 0 {
				t.Fatalf("%s without a key: %d %+v", c.step, status, r.Errors)
			}
			steps := r.Data["thread"].(map[string]any)["steps"].([]any)
			if len(steps) != c.steps || r.Extensions["cost"] != c.cost {
				t.Fatalf("%s without a key: %d steps, cost %v; want %d, %v", c.step, len(steps), r.Extensions["cost"], c.steps, c.cost)
			}
			if c.steps == 1 {
				subs := steps[0].(map[string]any)["subSteps"].([]any)
				if len(subs) != 1 || subs[0].(map[string]any)["name"] != "sub-42" {
					t.Fatalf("sub-steps of step-42: %v", subs)
				}
			}
		}
		// Any other document keeps charging every step of the thread.
		r, status := f.exec(t, withTypename(sdkdocs.GetStepSubSteps), map[string]any{"threadId": s.ID, "stepName": "step-42", "idempotencyKey": nil})
		if status != http.StatusUnprocessableEntity {
			t.Fatalf("own document: %d %v", status, r.Extensions)
		}
	})
}
