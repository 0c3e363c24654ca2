package graphqlapi

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/threadengine/engine/adapters/graphqlapi/graphqltest"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/app/readmodel"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

func testHandler(t testing.TB) *Handler {
	t.Helper()
	h, err := New(readmodel.New(readmodel.Deps{}), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestParseDocument(t *testing.T) {
	ok := []string{
		`{ a }`,
		"\uFEFF# comment\n{ a, b c(x: 1, y: -2.5e3, z: \"s\\u00e9\\n\", w: \"\"\"block \\\"\"\" text\"\"\", v: [1, [2]], o: {k: null, e: ENUM, b: true}) }",
		`query Q($a: [Int!]! = [1], $b: ID @dir) @op { x: field(arg: $a) @include(if: true) { ...F ... on T { y } ... @skip(if: false) { z } } }`,
		`fragment F on T { a } query { ...F }`,
		`mutation M { a } subscription S { b }`,
		`{ a(x: 0) }`,
	}
	for _, src := range ok {
		if _, err := parseDocument(src); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
	bad := []string{``, `{`, `{ }`, `{ a(x: ) }`, `{ a(x: $v) }` + ` fragment`, `query ($a: ) { a }`, `{ a(x: 01) }`,
		`{ a(x: 1.) }`, `{ a(x: "unterminated) }`, "{ a(x: \"line\nbreak\") }", `{ a(x: "\q") }`, `{ a(x: "\u12") }`,
		`{ a } }`, `fragment on on T { a }`, `fragment F on T { a } fragment F on T { b } { ...F }`, `{ a .. }`, `{ a(x: 1e) }`,
		`{ a(x: 1x) }`, `query Q($a: Int = $b) { a }`, `{ a ^ }`, strings.Repeat("{ a ", 200) + strings.Repeat("}", 200)}
	for _, src := range bad {
		if _, err := parseDocument(src); err == nil {
			t.Errorf("%q parsed", src)
		}
	}
}

func TestRelaxIDs(t *testing.T) {
	h := testHandler(t)
	cases := []struct{ in, want string }{
		// The SDK's GetStepSubSteps declares String! for thread(id: ID!).
		{`query($threadId: String!){ thread(id: $threadId) { id } }`, `query($threadId: ID    !){ thread(id: $threadId) { id } }`},
		// ID declared for a String argument.
		{`query($t: ID!){ stepHistory(threadId: $t, stepName: "s") { attempt } }`, `query($t: String!){ stepHistory(threadId: $t, stepName: "s") { attempt } }`},
		// Used in both kinds of position: left for validation to judge.
		{`query($t: String!){ thread(id: $t) { id } stepHistory(threadId: $t, stepName: "s") { attempt } }`, ``},
		// Through a fragment.
		{`query($t: String!){ ...F } fragment F on Query { thread(id: $t) { id } }`, `query($t: ID    !){ ...F } fragment F on Query { thread(id: $t) { id } }`},
		// Other types are untouched.
		{`query($n: String){ threads(limit: $n) { totalCount } }`, ``},
	}
	for _, c := range cases {
		doc, err := parseDocument(c.in)
		if err != nil {
			t.Fatal(err)
		}
		want := c.want
		if want == "" {
			want = c.in
		}
		if got := relaxIDs(c.in, doc, doc.ops[0], h.idx); got != want {
			t.Errorf("relaxIDs(%q) = %q, want %q", c.in, got, want)
		}
	}
}

func TestCostThroughFragmentsAndVariables(t *testing.T) {
	h := testHandler(t)
	plain := `{ threads(limit: 10) { threads { id steps { stepName history(limit: 5) { attempt } } } } }`
	want, err := h.Cost(Request{Query: plain})
	// Steps and their history are charged one item until the threads are read.
	if err != nil || want != 1+1+10*(1+1+1*(1+1+1)) {
		t.Fatalf("plain cost %d %v", want, err)
	}
	for _, c := range []struct {
		q    string
		vars map[string]any
	}{
		{`query { threads(limit: 10) { threads { ...T } } } fragment T on Thread { id steps { ...S } } fragment S on StepStateInfo { stepName history(limit: 5) { attempt } }`, nil},
		{`{ threads(limit: 10) { threads { ... on Thread { id steps { ... { stepName history(limit: 5) { attempt } } } } } } }`, nil},
		{`query($n: Int, $h: Int) { threads(limit: $n) { threads { id steps { stepName history(limit: $h) { attempt } } } } }`, map[string]any{"n": float64(10), "h": float64(5)}},
		{`query($n: Int = 10, $h: Int = 5) { threads(limit: $n) { threads { id steps { stepName history(limit: $h) { attempt } } } } }`, nil},
		{`query A { __typename } query B { threads(limit: 10) { threads { id steps { stepName history(limit: 5) { attempt } } } } }`, nil},
	} {
		req := Request{Query: c.q, Variables: c.vars}
		if strings.HasPrefix(c.q, "query A") {
			req.OperationName = "B"
		}
		got, err := h.Cost(req)
		if err != nil || got != want {
			t.Errorf("%s: cost %d (%v), want %d", c.q, got, err, want)
		}
	}
	// Every SDK query fits.
	for _, c := range graphqltest.SDKCases("t", "s", "k", "orderId", "O-1") {
		got, err := h.Cost(Request{Query: c.Query, Variables: c.Variables})
		if err != nil || got > domain.MaxQueryComplexity || got <= 0 {
			t.Errorf("%s: cost %d %v", c.Name, got, err)
		}
		t.Logf("%-28s cost %d", c.Name, got)
	}
}

// BenchmarkComplexity measures the analysis Execute adds to a request before
// graph-gophers runs, without the reads: parse, cycle and depth checks, ID
// relaxation (cold: a text not seen before; cached: the usual case), the
// conversion, the static price and — for operations whose price depends on
// their threads — the check that it does and the second price with the step
// counts read (a 20-step thread here).
func BenchmarkComplexity(b *testing.B) {
	h := testHandler(b)
	vars := map[string]any{"id": "t", "threadId": "t", "rootId": "t", "refKey": "orderId", "refValue": "O-1",
		"stepName": "s", "idempotencyKey": "k", "stepHistoryLimit": float64(50), "validationLimit": float64(10),
		"limit": float64(50), "offset": float64(0), "options": map[string]any{"limit": float64(10)}}
	price := func(a *analysis) int {
		root, roots, _ := costSet(a.doc, a.op, h.idx, vars)
		cost, readsMatter := h.model.PriceStatic(root)
		if readsMatter {
			reads := domain.ThreadsRead{}
			for _, r := range roots {
				reads[r.f] = []int{20}
			}
			cost = h.model.Price(root, reads)
		}
		return cost
	}
	for _, c := range []struct{ name, q string }{
		{"GetThread", graphqltest.GetThread},
		{"GetThreadsByRef", graphqltest.GetThreadsByRefGo},
		{"GetThreadSteps", graphqltest.GetThreadSteps},
		{"GetCompleteThread", graphqltest.GetCompleteThread},
		{"PyGetCompleteThread", graphqltest.PyGetCompleteThread},
		{"ThreadWith20Steps", ThreadWith20Steps},
	} {
		b.Run(c.name+"/cold", func(b *testing.B) {
			b.ReportAllocs()
			defer reportThreadCPU(b)()
			for b.Loop() {
				h.cache = analysisCache{}
				if a := h.analyse(c.q, ""); a.err != nil || a.invalid != "" || price(a) > domain.MaxQueryComplexity {
					b.Fatal(c.name)
				}
			}
		})
		b.Run(c.name+"/cached", func(b *testing.B) {
			b.ReportAllocs()
			defer reportThreadCPU(b)()
			for b.Loop() {
				if a := h.analyse(c.q, ""); price(a) > domain.MaxQueryComplexity {
					b.Fatal(c.name)
				}
			}
		})
	}
}

// ThreadWith20Steps is the query of the thread(id) benchmark and load test.
const ThreadWith20Steps = `query($id: ID!) { thread(id: $id) { ` + graphqltest.Thread + ` steps { stepName idempotencyKey status retryCount firstSeenAt lastUpdatedAt latestStepID } } }`

// BenchmarkThreadWith20Steps executes thread(id) with 20 steps end to end
// through Execute (no HTTP), on each test dialect.
func BenchmarkThreadWith20Steps(b *testing.B) {
	for _, d := range []sqldb.Dialect{sqldb.SQLite, sqldb.Postgres} {
		b.Run(string(d), func(b *testing.B) {
			f := newFixture(b, d)
			s := f.seed(b, "bench", 20)
			vars := map[string]any{"id": s.ID}
			ctx := f.ctx
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				res, status := f.h.Execute(ctx, Request{Query: ThreadWith20Steps, Variables: vars})
				if status != 200 || len(res.Errors) > 0 {
					b.Fatalf("%d %+v", status, res.Errors)
				}
			}
		})
	}
}

// snapshotQueries answers GetThreads and Steps from memory and everything
// else from the real store it wraps.
type snapshotQueries struct {
	ports.ThreadQueries
	threads []ports.ThreadView
	steps   map[string][]ports.StepView
}

func (s snapshotQueries) GetThreads(context.Context, []string) ([]ports.ThreadView, error) {
	return s.threads, nil
}

func (s snapshotQueries) Steps(context.Context, []string, ports.StepFilter, int) (map[string][]ports.StepView, error) {
	return s.steps, nil
}

// BenchmarkThreadWith20StepsInMemory runs the thread(id) query of the load
// test through Execute with its thread and 20 steps already in memory: what
// cost analysis, graph-gophers' executor, the resolvers and JSON encoding
// cost per request without SQL or HTTP, i.e. the engine's floor for it.
func BenchmarkThreadWith20StepsInMemory(b *testing.B) {
	f := newFixture(b, sqldb.SQLite)
	s := f.seed(b, "bench", 20)
	store := threadquery.New(f.db)
	threads, err := store.GetThreads(f.ctx, []string{s.ID})
	if err != nil || len(threads) != 1 {
		b.Fatalf("thread: %v %d", err, len(threads))
	}
	steps, err := store.Steps(f.ctx, []string{s.ID}, ports.StepFilter{}, 100)
	if err != nil || len(steps[s.ID]) != 20 {
		b.Fatalf("steps: %v %d", err, len(steps[s.ID]))
	}
	q := readmodel.New(readmodel.Deps{Store: snapshotQueries{ThreadQueries: store, threads: threads, steps: steps},
		ChainSecrets: readmodel.ChainSecrets(testSecret)})
	h, err := New(q, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	vars := map[string]any{"id": s.ID}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, status := h.Execute(f.ctx, Request{Query: ThreadWith20Steps, Variables: vars})
		if status != 200 || len(res.Errors) > 0 || !bytes.Contains(res.Data, []byte(`"latestStepID"`)) {
			b.Fatalf("%d %+v", status, res.Errors)
		}
	}
}
