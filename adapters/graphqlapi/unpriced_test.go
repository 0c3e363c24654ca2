package graphqlapi

import (
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/threadengine/engine/adapters/sqldb"
)

// Parts of a document the cost analysis does not price — another operation
// than the one run, a fragment nobody spreads — are still validated by the
// library, whose overlapping-fields check is quadratic in same-named
// fields. They are refused with a coded error, allocating a bounded amount
// (before the caps: 2.3 GiB for 1,500 aliases, 1.3 GiB for 5,000
// __typename, answered 200).
func TestUnpricedPartsOfADocumentAreBounded(t *testing.T) {
	f := newFixture(t, sqldb.SQLite)
	rep := func(n int, s string) string { return strings.Repeat(s, n) }
	docs := []struct{ name, query string }{
		{"1,500 same-named fields in another operation", `query A { __typename } query B {` + rep(1500, ` x: thread(id: "0") { id }`) + ` }`},
		{"4,500 __typename aliases in another operation", `query A { __typename } query B {` + rep(4500, ` x: __typename`) + ` }`},
		{"1,500 same-named fields in an unused fragment", `query A { __typename } fragment U on Query {` + rep(1500, ` x: thread(id: "0") { id }`) + ` }`},
	}
	for _, d := range docs {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		res, status := f.h.Execute(f.ctx, Request{Query: d.query, OperationName: "A"})
		runtime.ReadMemStats(&after)
		if status != http.StatusUnprocessableEntity || len(res.Errors) == 0 {
			t.Fatalf("%s: %d %+v", d.name, status, res)
		}
		code, _ := res.Errors[0].Extensions["code"].(string)
		if code != CodeValidationFailed && code != "COMPLEXITY_LIMIT_EXCEEDED" {
			t.Fatalf("%s: code %q (%s)", d.name, code, res.Errors[0].Message)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
			t.Fatalf("%s: allocated %d MiB", d.name, alloc>>20)
		}
		t.Logf("%s: %s (%s), %d MiB allocated", d.name, code, res.Errors[0].Message, (after.TotalAlloc-before.TotalAlloc)>>20)
	}
}
