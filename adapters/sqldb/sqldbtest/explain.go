package sqldbtest

import (
	"context"
	"testing"

	"github.com/threadengine/engine/adapters/sqldb"
)

// Explain returns the plan of q (? placeholders) with args, a line per
// node: PostgreSQL's EXPLAIN, in a transaction that first runs SET LOCAL
// of each of pgSettings (enable_seqscan = off: plan as a large table would
// make the planner) and is rolled back; SQLite's EXPLAIN QUERY PLAN
// details. For tests of which index a statement reads.
func Explain(t testing.TB, db *sqldb.DB, q string, args []any, pgSettings ...string) []string {
	t.Helper()
	ctx := context.Background()
	var plan []string
	if db.Dialect == sqldb.SQLite {
		var rows []struct {
			ID, Parent, NotUsed int
			Detail              string
		}
		if err := db.SelectContext(ctx, &rows, "EXPLAIN QUERY PLAN "+q, args...); err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			plan = append(plan, r.Detail)
		}
		return plan
	}
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, set := range pgSettings {
		if _, err := tx.ExecContext(ctx, "SET LOCAL "+set); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.SelectContext(ctx, &plan, "EXPLAIN "+db.Rebind(q), args...); err != nil {
		t.Fatal(err)
	}
	return plan
}
