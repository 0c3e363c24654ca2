package graphqlapi

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	graphql "github.com/graph-gophers/graphql-go"
	gqlerrors "github.com/graph-gophers/graphql-go/errors"
	"github.com/graph-gophers/graphql-go/introspection"

	"github.com/threadengine/engine/adapters/graphqlapi/graphqltest"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
)

// analyseAll is everything Execute does to a query text before anything is
// read or executed, without the cache: parse, cycle and depth checks, ID
// relaxation, conversion and the static price.
func analyseAll(h *Handler, q string, vars map[string]any) int {
	doc, err := parseDocument(q)
	if err != nil {
		return -1
	}
	if doc.spreadCycle() != "" || len(doc.ops) == 0 {
		return -1
	}
	op := doc.ops[0]
	_ = relaxIDs(q, doc, op, h.idx)
	doc.tooDeep(op.sel, 1, MaxDepth, map[string]int{})
	root, _, _ := costSet(doc, op, h.idx, vars)
	return h.model.Price(root, nil)
}

// Generated documents of growing size, each shaped to hit one part of the
// analysis: fragment diamonds, fragments spread by many others, aliases,
// variables the ID relaxation rewrites, nested inline fragments.
var shapes = map[string]func(size int) string{
	"diamond": func(size int) string { return graphqltest.Diamond(size / 46) },
	"fan-in": func(size int) string {
		n := size / 62
		var b strings.Builder
		b.WriteString(`{ thread(id: "t") { ...F0 } }`)
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "\nfragment F%d on Thread { id%d: id ...F%d ...F%d ...F%d }", i, i, i+1, i+2, i+3)
		}
		for i := n; i < n+3; i++ {
			fmt.Fprintf(&b, "\nfragment F%d on Thread { id }", i)
		}
		return b.String()
	},
	"aliases": func(size int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := 0; b.Len() < size; i++ {
			fmt.Fprintf(&b, ` a%d: thread(id: "t") { id status steps { stepName history(limit: 3) { attempt } } }`, i)
		}
		return b.String() + " }"
	},
	"variables": func(size int) string {
		n := size / 46
		var b strings.Builder
		b.WriteString("query(")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "$v%d: String! ", i)
		}
		b.WriteString(") {")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, " t%d: thread(id: $v%d) { id }", i, i)
		}
		return b.String() + " }"
	},
	"inline": func(size int) string {
		var b strings.Builder
		b.WriteString(`{ thread(id: "t") {`)
		for b.Len() < size {
			b.WriteString(strings.Repeat(" ... on Thread {", 50) + " id" + strings.Repeat(" }", 50))
		}
		return b.String() + " } }"
	},
}

// Analysis time grows linearly with the query's bytes, up to 100 KB, for
// every shape: the time per byte at 100 KB stays within a small factor of
// the time per byte at 10 KB.
func TestAnalysisIsLinear(t *testing.T) {
	h := testHandler(t)
	// CPU time of this thread, not wall time: the machine is shared, and
	// the test must measure the analysis, not the neighbours.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu := func() time.Duration {
		d, ok := threadCPU()
		if !ok {
			t.Skip("no thread CPU clock")
		}
		return d
	}
	// Each text is analysed over about 400 KB in total, the best of 3.
	measure := func(q string) time.Duration {
		reps := max(1, 400_000/len(q))
		best := time.Duration(1 << 62)
		for i := 0; i < 3; i++ {
			runtime.GC()
			start := cpu()
			for j := 0; j < reps; j++ {
				analyseAll(h, q, nil)
			}
			best = min(best, (cpu()-start)/time.Duration(reps))
		}
		return best
	}
	for name, gen := range shapes {
		small, large := gen(10_000), gen(100_000)
		if len(large) < 90_000 || len(large) > 110_000 {
			t.Fatalf("%s: generated %d bytes", name, len(large))
		}
		if analyseAll(h, large, nil) < 0 {
			t.Fatalf("%s: does not parse", name)
		}
		ts, tl := measure(small), measure(large)
		perSmall := float64(ts) / float64(len(small))
		perLarge := float64(tl) / float64(len(large))
		t.Logf("%-9s %6d B %8v   %6d B %8v   %.0f → %.0f ns/B", name, len(small), ts, len(large), tl, perSmall, perLarge)
		// Linear: 10× the bytes take about 10× the time. A quadratic
		// analysis would take 100×; 4× headroom absorbs a loaded machine.
		if perLarge > 4*perSmall {
			t.Errorf("%s: %.0f ns/byte at %d bytes, %.0f at %d", name, perLarge, len(large), perSmall, len(small))
		}
	}
}

// FuzzParseDocument runs the parser and the whole analysis on arbitrary
// text: it must not panic, loop or take more than linear time.
func FuzzParseDocument(f *testing.F) {
	for _, s := range []string{graphqltest.GetCompleteThread, graphqltest.GetStepSubSteps, graphqltest.PyGetCompleteThread,
		`fragment F on T { a ...F }`, `{ a(x: """b""") }`, graphqltest.Diamond(3), shapes["fan-in"](400)} {
		f.Add(s)
	}
	h := testHandler(f)
	f.Fuzz(func(t *testing.T, src string) {
		// CPU time of this thread, not wall time: on a shared machine a
		// descheduled goroutine is not a slow analysis.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		start, ok := threadCPU()
		analyseAll(h, src, nil)
		if end, _ := threadCPU(); ok && end-start > time.Second {
			t.Fatalf("analysis of %d bytes took %v of CPU", len(src), end-start)
		}
	})
}

// fieldTracer counts the fields graph-gophers resolves, per request.
type fieldTracer struct{}

type tracedKey struct{}

type traced struct {
	mu     sync.Mutex
	count  int
	fields map[domain.FieldKey]bool
}

func (fieldTracer) TraceQuery(ctx context.Context, _, _ string, _ map[string]any, _ map[string]*introspection.Type) (context.Context, func([]*gqlerrors.QueryError)) {
	return ctx, func([]*gqlerrors.QueryError) {}
}

func (fieldTracer) TraceField(ctx context.Context, _, typeName, fieldName string, _ bool, _ map[string]any) (context.Context, func(*gqlerrors.QueryError)) {
	if tr, ok := ctx.Value(tracedKey{}).(*traced); ok {
		tr.mu.Lock()
		tr.count++
		tr.fields[domain.FieldKey{Type: typeName, Field: fieldName}] = true
		tr.mu.Unlock()
	}
	return ctx, func(*gqlerrors.QueryError) {}
}

// docGen writes a random valid operation over the schema: real fields with
// their arguments, unique aliases, named fragments spread once or twice and
// inline fragments.
type docGen struct {
	h      *Handler
	r      *rand.Rand
	id     string
	n      int
	frags  []string
	budget int
}

var fieldArgs = map[domain.FieldKey]string{
	{Type: "Query", Field: "thread"}:                     `(id: "{id}")`,
	{Type: "Query", Field: "threads"}:                    `(limit: {n})`,
	{Type: "Query", Field: "threadsByContract"}:          `(contractName: "none", limit: {n})`,
	{Type: "Query", Field: "threadsByRef"}:               `(refValue: "O-", limit: {n})`,
	{Type: "Query", Field: "threadChain"}:                `(rootId: "{id}", maxDepth: 2)`,
	{Type: "Query", Field: "stepHistory"}:                `(threadId: "{id}", stepName: "step-0", limit: {n})`,
	{Type: "Query", Field: "validationResults"}:          `(threadId: "{id}", stepName: "step-0", idempotencyKey: "k0", limit: {n})`,
	{Type: "Query", Field: "contractGraph"}:              `(name: "none")`,
	{Type: "Query", Field: "verifyThreadIntegrity"}:      `(threadId: "{id}")`,
	{Type: "StepStateInfo", Field: "history"}:            `(limit: {n})`,
	{Type: "Thread", Field: "validationResults"}:         `(options: { limit: {n} })`,
	{Type: "Thread", Field: "notifications"}:             `(options: { limit: {n} })`,
	{Type: "Thread", Field: "threadChain"}:               `(maxDepth: 2)`,
	{Type: "Thread", Field: "steps"}:                     ``,
	{Type: "ThreadConnection", Field: "threads"}:         ``,
	{Type: "ValidationResultInfo", Field: "validations"}: ``,
	{Type: "Query", Field: "verifyStepIntegrity"}:        `(threadId: "{id}", stepName: "step-0", idempotencyKey: "k0")`,
	{Type: "Query", Field: "resolveActors"}:              `(ids: ["u1", "{id}"])`,
	{Type: "Query", Field: "stepStats"}:                  `(contractName: "none")`,
	{Type: "Query", Field: "overview"}:                   `(hours: {n}, limit: {n})`,
	{Type: "Thread", Field: "attempts"}:                  `(limit: {n})`,
	{Type: "Query", Field: "problems"}:                   `(hours: {n})`,
	{Type: "Query", Field: "processMap"}:                 `(contractName: "none")`,
	{Type: "Query", Field: "contractDiff"}:               `(name: "none", from: 1, to: 2)`,
	{Type: "Query", Field: "can"}:                        `(threadId: "{id}", action: "step-0")`,
	{Type: "Query", Field: "should"}:                     `(threadId: "{id}", action: "step-0")`,
	{Type: "Query", Field: "next"}:                       `(threadId: "{id}")`,
}

func (g *docGen) selection(typ string, depth int) string {
	fields := g.h.idx.objects[typ]
	names := make([]string, 0, len(fields))
	for name := range fields {
		if !strings.HasPrefix(name, "__") {
			names = append(names, name)
		}
	}
	// Map order is random; sort for reproducible documents.
	sortStrings(names)
	var b strings.Builder
	b.WriteString("{")
	picks := 1 + g.r.IntN(3)
	for i := 0; i < picks && g.budget > 0; i++ {
		g.budget--
		name := names[g.r.IntN(len(names))]
		fi := fields[name]
		_, object := g.h.idx.objects[fi.typeName]
		if object && depth >= 4 {
			continue
		}
		g.n++
		fmt.Fprintf(&b, " f%d: %s", g.n, name)
		if a, ok := fieldArgs[domain.FieldKey{Type: typ, Field: name}]; ok && a != "" {
			b.WriteString(strings.NewReplacer("{id}", g.id, "{n}", fmt.Sprint(1+g.r.IntN(4))).Replace(a))
		} else if !ok && len(fi.args) > 0 {
			g.n--
			continue
		}
		if object {
			sub := g.selection(fi.typeName, depth+1)
			switch g.r.IntN(4) {
			case 0: // a named fragment, spread once or twice
				name := fmt.Sprintf("G%d", len(g.frags))
				g.frags = append(g.frags, fmt.Sprintf("fragment %s on %s %s", name, fi.typeName, sub))
				sub = fmt.Sprintf("{ ...%s ...%s }", name, name)
			case 1:
				sub = fmt.Sprintf("{ ... on %s %s }", fi.typeName, sub)
			}
			b.WriteString(" " + sub)
		}
	}
	if b.Len() == 1 {
		b.WriteString(" __typename")
	}
	return b.String() + " }"
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// FuzzCostCoversExecution: for random valid operations executed against
// real data, the fields graph-gophers resolves are fields of our cost view,
// and the cost charged is at least the number of field values resolved — the
// analysis and the executor see the same operation.
func FuzzCostCoversExecution(f *testing.F) {
	for i := uint64(0); i < 8; i++ {
		f.Add(i)
	}
	fx := newFixture(f, sqldb.SQLite)
	parent := fx.seed(f, "p", 3)
	child := fx.seed(f, "c", 2)
	if err := graphqltest.Link(fx.ctx, fx.threads, parent.ID, child.ID); err != nil {
		f.Fatal(err)
	}
	if err := graphqltest.InsertValidation(fx.ctx, fx.db, parent, time.Now()); err != nil {
		f.Fatal(err)
	}
	s, err := fx.h.parseSchema(graphqlTracer(fieldTracer{}))
	if err != nil {
		f.Fatal(err)
	}
	fx.h.schema = s
	f.Fuzz(func(t *testing.T, seed uint64) {
		g := &docGen{h: fx.h, r: rand.New(rand.NewPCG(seed, seed>>7)), id: parent.ID, budget: 12}
		sel := g.selection("Query", 1)
		q := "query Q " + sel + "\n" + strings.Join(g.frags, "\n")
		tr := &traced{fields: map[domain.FieldKey]bool{}}
		r, status := fx.execCtx(t, context.WithValue(fx.ctx, tracedKey{}, tr), q, nil)
		if status == http.StatusUnprocessableEntity && len(r.Errors) > 0 && r.Errors[0].Extensions["code"] == "COMPLEXITY_LIMIT_EXCEEDED" {
			return
		}
		if status != http.StatusOK {
			t.Fatalf("%s\n%d %+v", q, status, r.Errors)
		}
		cost := int(r.Extensions["cost"].(float64))
		if tr.count > cost {
			t.Fatalf("%s\nresolved %d field values for a cost of %d", q, tr.count, cost)
		}
		doc, _ := parseDocument(q)
		root, _, _ := costSet(doc, doc.ops[0], fx.h.idx, nil)
		ours := map[domain.FieldKey]bool{}
		var walk func(s *domain.CostSet)
		seen := map[*domain.CostSet]bool{}
		walk = func(s *domain.CostSet) {
			if s == nil || seen[s] {
				return
			}
			seen[s] = true
			for _, f := range s.Fields {
				ours[domain.FieldKey{Type: f.Parent, Field: f.Name}] = true
				walk(f.Children)
			}
			for _, sub := range s.Sets {
				walk(sub)
			}
		}
		walk(root)
		for k := range tr.fields {
			if !ours[k] && k.Field != "__typename" {
				t.Fatalf("%s\nexecuted %s.%s, which the cost view does not hold", q, k.Type, k.Field)
			}
		}
	})
}

func graphqlTracer(t fieldTracer) graphql.SchemaOpt { return graphql.Tracer(t) }

// threadCPU returns the CPU time of the calling OS thread (the caller locks
// its goroutine to the thread).
func threadCPU() (time.Duration, bool) {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}

// reportThreadCPU adds the benchmark's CPU time per operation (cpu-ns/op):
// on a shared machine wall time per operation measures the neighbours too.
func reportThreadCPU(b *testing.B) func() {
	runtime.LockOSThread()
	start, ok := threadCPU()
	return func() {
		end, _ := threadCPU()
		runtime.UnlockOSThread()
		if ok && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
