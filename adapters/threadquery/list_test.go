package threadquery_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// seedList writes n thread rows straight into the schema: start times with
// ties (every 7th thread shares a second), durations with ties, ref values
// "ord-<i>" and an exact "ord-1" among its superstrings (ord-10…).
func seedList(t *testing.T, db *sqldb.DB, n int) {
	t.Helper()
	ctx := context.Background()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%02x-%04d", i*37%256, i)
		at := sqldb.Time(base.Add(time.Duration(i%7) * time.Second))
		health := domain.HealthOK
		if i%3 == 0 {
			health = domain.HealthViolated
		}
		if _, err := db.ExecContext(ctx, db.Rebind(`INSERT INTO threads (id, owner_kind, owner_id, status, created_at, updated_at, duration_ms, health, contract_name)
 VALUES (?, 'user', 'u1', ?, ?, ?, ?, ?, ?)`), id, []string{"completed", "failed"}[i%2], at, at, int64(i%5)*1000, string(health),
			fmt.Sprintf("c%d", i%2)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, db.Rebind(`INSERT INTO thread_refs (thread_id, ref_key, ref_value) VALUES (?, 'orderId', ?)`),
			id, fmt.Sprintf("ORD-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
}

func ids(ts []ports.ThreadView) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

// TestListKeysetPaging: paging by position, forwards and backwards, reads
// exactly the list read in one page, in every order and filter, and the
// bounded count stops at its bound.
func TestListKeysetPaging(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		seedList(t, db, 40)
		s := threadquery.New(db)
		ctx := context.Background()
		for _, f := range []ports.ThreadFilter{
			{},
			{Ascending: true},
			{OrderBy: ports.OrderDuration},
			{OrderBy: ports.OrderDuration, Ascending: true},
			{RefValue: "ord-1"},
			{RefValue: "Ord-1", RefKey: "orderId", Ascending: true},
			{RefValue: "3"}, // shorter than a trigram: SQLite scans
			{Status: "failed"},
			{Health: []domain.HealthStatus{domain.HealthViolated}, OrderBy: ports.OrderDuration},
			{ContractName: "c1"},
			{IDPrefix: "2"},
			{IDPrefix: "4A"}, // case-insensitive: ids are stored lowercase
		} {
			t.Run(fmt.Sprintf("%+v", f), func(t *testing.T) {
				all := f
				all.Limit = 100
				want, err := s.ListThreads(ctx, all)
				if err != nil {
					t.Fatal(err)
				}
				if len(want) == 0 {
					t.Fatal("the filter matches nothing; the test would prove nothing")
				}
				n, err := s.CountThreads(ctx, f, 1000)
				if err != nil || n != len(want) {
					t.Fatalf("count %d %v, want %d", n, err, len(want))
				}
				if n, err := s.CountThreads(ctx, f, 2); err != nil || n != min(2, len(want)) {
					t.Fatalf("count up to 2: %d %v", n, err)
				}
				// Forwards from each page's last thread.
				var got []ports.ThreadView
				page := f
				page.Limit = 3
				for i := 0; i < 50; i++ {
					rows, err := s.ListThreads(ctx, page)
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, rows...)
					if len(rows) < page.Limit {
						break
					}
					p := rows[len(rows)-1].Position()
					page.After = &p
				}
				if !slices.Equal(ids(got), ids(want)) {
					t.Fatalf("forwards:\n got %v\nwant %v", ids(got), ids(want))
				}
				// Backwards from the last thread: pages come in list order.
				last := want[len(want)-1].Position()
				got = []ports.ThreadView{want[len(want)-1]}
				page = f
				page.Limit = 4
				page.Before = &last
				for i := 0; i < 50; i++ {
					rows, err := s.ListThreads(ctx, page)
					if err != nil {
						t.Fatal(err)
					}
					got = append(slices.Clone(rows), got...)
					if len(rows) < page.Limit {
						break
					}
					p := rows[0].Position()
					page.Before = &p
				}
				if !slices.Equal(ids(got), ids(want)) {
					t.Fatalf("backwards:\n got %v\nwant %v", ids(got), ids(want))
				}
				// Offset pages are slices of the same list.
				off := f
				off.Limit, off.Offset = 5, 2
				rows, err := s.ListThreads(ctx, off)
				if err != nil || !slices.Equal(ids(rows), ids(want[min(2, len(want)):min(7, len(want))])) {
					t.Fatalf("offset: %v %v", ids(rows), err)
				}
			})
		}
		// The exact match sorts first and says so.
		rows, err := s.ListThreads(ctx, ports.ThreadFilter{RefValue: "ORD-1", Limit: 100})
		if err != nil || len(rows) != 11 || rows[0].ID != "25-0001" || !rows[0].ExactRef || rows[1].ExactRef {
			t.Fatalf("exact first: %v %v", ids(rows), err)
		}
	})
}
