package threadquery_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/ports"
)

// TestRefSearchByUncommonWords: a ref search whose term has a common word
// ("ord", in every ref) finds exactly the refs containing the term, case
// aside — not those holding its words apart or in another order — in the
// list and its count; the trigram index (pg_trgm, SQLite's FTS5 trigram
// table) is asked for the uncommon word only (refstats.go).
func TestRefSearchByUncommonWords(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		ctx := context.Background()
		// 2,000 refs ORD-0 … ORD-1999 (seedList), so that the statistics'
		// histogram (101 values) holds "ord" in every value and 12345 in one
		// at most.
		seedList(t, db, 2000)
		values := map[string]string{"ff-1000": "Ord-12345", "ff-1001": "xORD-123456y", "ff-1002": "ord_12345",
			"ff-1003": "ord 12345", "ff-1004": "12345-ord", "ff-1005": "ord-1 2345", "ff-1006": "ORD-9912345"}
		for id, v := range values {
			if _, err := db.ExecContext(ctx, db.Rebind(`INSERT INTO threads (id, owner_kind, owner_id, status, created_at, updated_at, health, tags)
 VALUES (?, 'user', 'u1', 'completed', ?, ?, 'OK', '[]')`), id, "2026-01-02T03:04:05Z", "2026-01-02T03:04:05Z"); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, db.Rebind(`INSERT INTO thread_refs (thread_id, ref_key, ref_value) VALUES (?, 'orderId', ?)`), id, v); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.ExecContext(ctx, `ANALYZE thread_refs`); err != nil {
			t.Fatal(err)
		}
		s := threadquery.New(db)
		var stmts []string
		s.OnQuery(func(q string, args []any) { stmts = append(stmts, fmt.Sprint(q, args)) })
		for _, c := range []struct {
			term  string
			want  []string
			index string // the pattern the trigram index gets
		}{
			{"ord-12345", []string{"ff-1000", "ff-1001"}, "%12345%"},
			{"ORD-12345", []string{"ff-1000", "ff-1001"}, "%12345%"},
			{"rd-12345", []string{"ff-1000", "ff-1001"}, "%12345%"},
			{"ord-99123", []string{"ff-1006"}, "%99123%"},
			{"ord-1999", []string{"eb-1999"}, "%1999%"},
		} {
			stmts = nil
			f := ports.ThreadFilter{RefValue: c.term, Limit: 100}
			rows, err := s.ListThreads(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			got := ids(rows)
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Errorf("%q: %v, want %v", c.term, got, c.want)
			}
			if n, err := s.CountThreads(ctx, f, 1000); err != nil || n != len(c.want) {
				t.Errorf("%q: count %d %v, want %d", c.term, n, err, len(c.want))
			}
			if !strings.Contains(strings.Join(stmts, "\n"), "["+c.index+" ") {
				t.Errorf("%q: the index was not asked for %s alone:\n%s", c.term, c.index, strings.Join(stmts, "\n"))
			}
		}
	})
}

// TestRefSampleSurvivesRowidGaps: on SQLite the statistics are a sample of
// refs at random rowids; after retention most rowids of the span are gone
// (here 19 of 20), and the sample draws again until it has enough refs, so
// the trigram table is still asked for the uncommon word only.
func TestRefSampleSurvivesRowidGaps(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	ctx := context.Background()
	seedList(t, db, 3000)
	if _, err := db.ExecContext(ctx, `INSERT INTO threads (id, owner_kind, owner_id, status, created_at, updated_at, health, tags)
 VALUES ('ff-1000', 'user', 'u1', 'completed', '2026-01-02T03:04:05Z', '2026-01-02T03:04:05Z', 'OK', '[]')`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO thread_refs (thread_id, ref_key, ref_value) VALUES ('ff-1000', 'orderId', 'Ord-12345')`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM thread_refs WHERE rowid % 20 <> 0 AND thread_id <> 'ff-1000'`); err != nil {
		t.Fatal(err)
	}
	s := threadquery.New(db)
	var stmts []string
	s.OnQuery(func(q string, args []any) { stmts = append(stmts, fmt.Sprint(q, args)) })
	rows, err := s.ListThreads(ctx, ports.ThreadFilter{RefValue: "ord-12345", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(rows); !slices.Equal(got, []string{"ff-1000"}) {
		t.Fatalf("found %v", got)
	}
	if !strings.Contains(strings.Join(stmts, "\n"), " %12345% %ord-12345% ") {
		t.Fatalf("the trigram table was not asked for %%12345%% alone:\n%s", strings.Join(stmts, "\n"))
	}
}
