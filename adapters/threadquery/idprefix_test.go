package threadquery_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/ports"
)

// TestIDPrefixPagesWalkTheirGroup: an idPrefix search finds exactly the
// threads whose id starts with the prefix (any case asked, ids stored
// lowercase), newest first — LIKE's wildcards in a prefix match only
// themselves — and a prefix of exactly two characters reads its page from
// threads_id_prefix2_created (migration 00107) in list order instead of
// sorting every match.
func TestIDPrefixPagesWalkTheirGroup(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		ctx := context.Background()
		base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
		// A twentieth of the threads in the group "ab" (some of them
		// "abc…"), the rest spread over other groups, including "a"
		// followed by other characters and ids that contain "ab" later on.
		var all []string
		tx, err := db.BeginTxx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 6000; i++ {
			var id string
			switch {
			case i%97 == 1: // LIKE's wildcards, which a prefix matches literally
				id = fmt.Sprintf("a_%06d", i)
			case i%97 == 2:
				id = fmt.Sprintf("_b%06d", i)
			case i%20 == 0 && i%60 == 0:
				id = fmt.Sprintf("abc%05d", i)
			case i%20 == 0:
				id = fmt.Sprintf("ab%06d", i)
			case i%3 == 0:
				id = fmt.Sprintf("a%02x-ab%04d", i%256, i)
			default:
				id = fmt.Sprintf("%02x%06d", i%256, i)
			}
			all = append(all, id)
			at := sqldb.Time(base.Add(time.Duration(i) * time.Second))
			if _, err := tx.ExecContext(ctx, db.Rebind(`INSERT INTO threads (id, owner_kind, owner_id, status, created_at, updated_at, health)
 VALUES (?, 'user', 'u1', 'completed', ?, ?, 'OK')`), id, at, at); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, `ANALYZE`); err != nil {
			t.Fatal(err)
		}
		s := threadquery.New(db)
		for _, p := range []string{"a", "ab", "AB", "abc", "abc0", "a0", "b", "a_", "_b", "a%", "_"} {
			var want []string
			for i := len(all) - 1; i >= 0; i-- { // newest first
				if strings.HasPrefix(all[i], strings.ToLower(p)) {
					want = append(want, all[i])
				}
			}
			got := ids(pageForwards(t, s, ports.ThreadFilter{IDPrefix: p}, 40))
			if len(want) > 2000 {
				want = want[:2000] // pageForwards reads at most 50 pages
			}
			if len(want) < 2000 && len(got) != len(want) || !slices.Equal(got[:min(len(got), len(want))], want) || len(got) < len(want) {
				t.Fatalf("prefix %q: got %d threads, want %d (first %v, want %v)", p, len(got), len(want), got[:min(3, len(got))], want[:min(3, len(want))])
			}
			if n, err := s.CountThreads(ctx, ports.ThreadFilter{IDPrefix: p}, 10_000); err != nil || n != countPrefix(all, p) {
				t.Fatalf("prefix %q: count %d %v, want %d", p, n, err, countPrefix(all, p))
			}
		}

		// The page's plan: the group's index, no sort of the matches.
		var stmts [][]any
		s.OnQuery(func(q string, args []any) { stmts = append(stmts, append([]any{q}, args...)) })
		if _, err := s.ListThreads(ctx, ports.ThreadFilter{IDPrefix: "ab", Limit: 50}); err != nil {
			t.Fatal(err)
		}
		s.OnQuery(nil)
		if len(stmts) != 1 {
			t.Fatalf("%d statements", len(stmts))
		}
		plan := explain(t, db, stmts[0][0].(string), stmts[0][1:])
		if !strings.Contains(plan, "threads_id_prefix2_created") {
			t.Fatalf("the page does not walk the prefix group's index:\n%s", plan)
		}
	})
}

func countPrefix(ids []string, p string) int {
	n := 0
	for _, id := range ids {
		if strings.HasPrefix(id, strings.ToLower(p)) {
			n++
		}
	}
	return n
}
