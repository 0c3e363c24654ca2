package threadquery_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/ports"
)

// TestRefKeyFilterIgnoresCase: refKey=orderid finds refs stored as orderId,
// alone and with a refValue, in the list, its count and the export (the
// Problems view links to the same list); a key no ref has finds nothing;
// and the statements read thread_refs through an index, not a scan.
func TestRefKeyFilterIgnoresCase(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		seedList(t, db, 40)
		ctx := context.Background()
		for _, id := range []string{"00-0000", "4a-0002"} {
			if _, err := db.ExecContext(ctx, db.Rebind(`INSERT INTO thread_refs (thread_id, ref_key, ref_value) VALUES (?, 'Carrier', 'DHL')`), id); err != nil {
				t.Fatal(err)
			}
		}
		s := threadquery.New(db)
		list := func(f ports.ThreadFilter) []string {
			t.Helper()
			f.Limit = 100
			rows, err := s.ListThreads(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			n, err := s.CountThreads(ctx, f, 1000)
			if err != nil || n != len(rows) {
				t.Fatalf("count %d %v, listed %d", n, err, len(rows))
			}
			return ids(rows)
		}
		export := func(f ports.ExportFilter) []string {
			t.Helper()
			cur, err := s.ListThreadIDs(ctx, f, nil, 100)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, c := range cur {
				out = append(out, c.ID)
			}
			slices.Sort(out)
			return out
		}
		all := list(ports.ThreadFilter{RefKey: "orderId"})
		if len(all) != 40 {
			t.Fatalf("orderId: %d threads", len(all))
		}
		for _, k := range []string{"orderid", "ORDERID", "OrderId"} {
			if got := list(ports.ThreadFilter{RefKey: k}); !slices.Equal(got, all) {
				t.Fatalf("refKey %q: %v", k, got)
			}
			if got := list(ports.ThreadFilter{RefKey: k, RefValue: "ORD-1"}); len(got) != 11 || got[0] != "25-0001" {
				t.Fatalf("refKey %q refValue ORD-1: %v", k, got)
			}
			if got := export(ports.ExportFilter{RefKey: k}); len(got) != 40 {
				t.Fatalf("export refKey %q: %d", k, len(got))
			}
		}
		if got := list(ports.ThreadFilter{RefKey: "carrier"}); !slices.Equal(got, []string{"4a-0002", "00-0000"}) {
			t.Fatalf("carrier: %v", got)
		}
		if got := export(ports.ExportFilter{RefKey: "CARRIER", RefValue: "dhl"}); !slices.Equal(got, []string{"00-0000", "4a-0002"}) {
			t.Fatalf("export carrier: %v", got)
		}
		if got := list(ports.ThreadFilter{RefKey: "order"}); len(got) != 0 {
			t.Fatalf("a key is matched whole: %v", got)
		}

		// Index-served: no statement scans thread_refs (PostgreSQL with
		// sequential scans discouraged, as a large table would make them).
		var stmts [][]any
		s.OnQuery(func(q string, args []any) { stmts = append(stmts, append([]any{q}, args...)) })
		list(ports.ThreadFilter{RefKey: "carrier"})
		list(ports.ThreadFilter{RefKey: "carrier", RefValue: "dhl"})
		s.OnQuery(nil)
		for _, st := range stmts {
			plan := explain(t, db, st[0].(string), st[1:])
			if strings.Contains(plan, "Seq Scan on thread_refs") || strings.Contains(plan, "SCAN r\n") || strings.HasSuffix(plan, "SCAN r") {
				t.Fatalf("thread_refs scanned:\n%s\n%s", st[0], plan)
			}
			if !strings.Contains(plan, "thread_refs_key_lower") && !strings.Contains(plan, "thread_refs_pkey") && !strings.Contains(plan, "sqlite_autoindex_thread_refs") {
				t.Fatalf("no thread_refs index:\n%s\n%s", st[0], plan)
			}
		}
	})
}

// explain is the plan of q as one text, with sequential scans discouraged
// as a large table would make them.
func explain(t *testing.T, db *sqldb.DB, q string, args []any) string {
	t.Helper()
	return strings.Join(sqldbtest.Explain(t, db, q, args, "enable_seqscan = off"), "\n")
}
