package graphqlapi

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/graphqlapi/graphqltest"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
)

// maxSDKRowFields bounds the fields resolved per row of an SDK document.
const maxSDKRowFields = 16

// costViewFields lists the (type, field) pairs of a cost view.
func costViewFields(root *domain.CostSet) map[domain.FieldKey]bool {
	out := map[domain.FieldKey]bool{}
	seen := map[*domain.CostSet]bool{}
	var walk func(s *domain.CostSet)
	walk = func(s *domain.CostSet) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		for _, f := range s.Fields {
			out[domain.FieldKey{Type: f.Parent, Field: f.Name}] = true
			walk(f.Children)
		}
		for _, sub := range s.Sets {
			walk(sub)
		}
	}
	walk(root)
	return out
}

// FuzzCostViewMatchesExecutor: for any document and variables graph-gophers
// executes, every field it resolves is in the cost view this adapter built
// from its own parse of the same text and variables (the view prices what
// runs), and the cost charged is at least the field values resolved. The
// seed corpus is every SDK operation (Node, Go, Python) with the variables
// each SDK sends, run against a seeded thread; `go test` runs the seeds.
func FuzzCostViewMatchesExecutor(f *testing.F) {
	fx := newFixture(f, sqldb.SQLite)
	s := fx.seed(f, "fz", 3)
	child := fx.seed(f, "fzc", 2)
	if err := graphqltest.Link(fx.ctx, fx.threads, s.ID, child.ID); err != nil {
		f.Fatal(err)
	}
	if err := graphqltest.InsertValidation(fx.ctx, fx.db, s, time.Now()); err != nil {
		f.Fatal(err)
	}
	schema, err := fx.h.parseSchema(graphqlTracer(fieldTracer{}))
	if err != nil {
		f.Fatal(err)
	}
	fx.h.schema = schema

	run := func(t testing.TB, q string, vars map[string]any) (resolved int, ok bool) {
		tr := &traced{fields: map[domain.FieldKey]bool{}}
		r, status := fx.execCtx(t, context.WithValue(fx.ctx, tracedKey{}, tr), q, vars)
		if status != http.StatusOK {
			return 0, false // refused before execution: nothing to compare
		}
		a := fx.h.analyse(q, "")
		if a.op == nil {
			t.Fatalf("%s\nexecuted, but the analysis chose no operation", q)
		}
		// The variables as the handler saw them (JSON numbers are float64).
		b, _ := json.Marshal(vars)
		var v map[string]any
		_ = json.Unmarshal(b, &v)
		root, _, _ := costSet(a.doc, a.op, fx.h.idx, v)
		ours := costViewFields(root)
		for k := range tr.fields {
			if !ours[k] && k.Field != "__typename" {
				t.Fatalf("%s\nvariables %s\nexecuted %s.%s, which the cost view does not hold", q, b, k.Type, k.Field)
			}
		}
		// An SDK document is priced by rows: each row it returns selects
		// at most maxSDKRowFields fields (a validation result's 14 and
		// its list of validations).
		perPoint := 1
		if a.sdk {
			perPoint = maxSDKRowFields
		}
		if cost := int(r.Extensions["cost"].(float64)); tr.count > cost*perPoint {
			t.Fatalf("%s\nresolved %d field values for a cost of %d (%d per point)", q, tr.count, cost, perPoint)
		}
		return tr.count, true
	}

	cases := append(graphqltest.SDKCases(s.ID, s.StepName, s.StepKey, s.RefKey, s.RefValue),
		graphqltest.PythonCases(s.ID, s.StepName, s.StepKey, s.RefKey, s.RefValue)...)
	for _, c := range cases {
		vars, err := json.Marshal(c.Variables)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(c.Query, string(vars))
	}
	// Every seed executes and resolves fields, so the comparison is not vacuous.
	for _, c := range cases {
		if n, ok := run(f, c.Query, c.Variables); !ok || n == 0 {
			f.Errorf("%s: executed %v, %d field values resolved", c.Name, ok, n)
		}
	}
	f.Fuzz(func(t *testing.T, q, varsJSON string) {
		if len(q) > MaxQueryBytes {
			return
		}
		var vars map[string]any
		if json.Unmarshal([]byte(varsJSON), &vars) != nil {
			vars = nil
		}
		run(t, q, vars)
	})
}
