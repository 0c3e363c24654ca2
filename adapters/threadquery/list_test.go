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
		tags := []string{`["web","priority"]`, `["web"]`, `[]`, `["api","web","api"]`}[i%4]
		if _, err := db.ExecContext(ctx, db.Rebind(`INSERT INTO threads (id, owner_kind, owner_id, status, created_at, updated_at, duration_ms, health, contract_name, tags)
 VALUES (?, 'user', 'u1', ?, ?, ?, ?, ?, ?, ?)`), id, []string{"completed", "failed"}[i%2], at, at, int64(i%5)*1000, string(health),
			fmt.Sprintf("c%d", i%2), tags); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, db.Rebind(`INSERT INTO thread_refs (thread_id, ref_key, ref_value) VALUES (?, 'orderId', ?)`),
			id, fmt.Sprintf("ORD-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
}

// pageForwards reads f's list a page of size at a time, each page after
// the previous page's last thread (at most 50 pages).
func pageForwards(t *testing.T, s *threadquery.Store, f ports.ThreadFilter, size int) []ports.ThreadView {
	t.Helper()
	var got []ports.ThreadView
	page := f
	page.Limit = size
	for i := 0; i < 50; i++ {
		rows, err := s.ListThreads(context.Background(), page)
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
	return got
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
			{Tag: "priority"},
			{Tag: "web", Status: "completed", OrderBy: ports.OrderDuration},
			{Tag: "api", Ascending: true},
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
				got := pageForwards(t, s, f, 3)
				if !slices.Equal(ids(got), ids(want)) {
					t.Fatalf("forwards:\n got %v\nwant %v", ids(got), ids(want))
				}
				// Backwards from the last thread: pages come in list order.
				last := want[len(want)-1].Position()
				got = []ports.ThreadView{want[len(want)-1]}
				page := f
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

// TestTagFilterFollowsTheThread: thread_tags (kept by triggers on threads)
// follows a thread's tags and start time through inserts and updates, and
// the tag filter's page and counts (the tag alone: thread_tags only) agree
// with the threads' own tags.
func TestTagFilterFollowsTheThread(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		seedList(t, db, 12)
		s := threadquery.New(db)
		ctx := context.Background()
		check := func(stage, tag string, want []string) {
			t.Helper()
			got, err := s.ListThreads(ctx, ports.ThreadFilter{Tag: tag, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(got), want) {
				t.Fatalf("%s: tag %q lists %v, want %v", stage, tag, ids(got), want)
			}
			for _, f := range []ports.ThreadFilter{{Tag: tag}, {Tag: tag, Ascending: true}} {
				if n, err := s.CountThreads(ctx, f, 100); err != nil || n != len(want) {
					t.Fatalf("%s: tag %q counts %d %v, want %d", stage, tag, n, err, len(want))
				}
			}
			if len(want) > 1 {
				if n, err := s.CountThreads(ctx, ports.ThreadFilter{Tag: tag}, 1); err != nil || n != 1 {
					t.Fatalf("%s: tag %q counts up to 1: %d %v", stage, tag, n, err)
				}
			}
		}
		// From the threads' own column, newest first.
		expect := func(tag string) []string {
			var out []string
			q := `SELECT id FROM threads t WHERE EXISTS (SELECT 1 FROM json_each(t.tags) j WHERE j.value = ?) ORDER BY created_at DESC, id DESC`
			if d == sqldb.Postgres {
				q = `SELECT id FROM threads t WHERE t.tags @> jsonb_build_array(CAST($1 AS TEXT)) ORDER BY created_at DESC, id DESC`
				if err := db.Select(&out, q, tag); err != nil {
					t.Fatal(err)
				}
				return out
			}
			if err := db.Select(&out, q, tag); err != nil {
				t.Fatal(err)
			}
			return out
		}
		for _, tag := range []string{"web", "priority", "api", "none"} {
			check("seeded", tag, expect(tag))
		}
		if len(expect("api")) == 0 || len(expect("priority")) == 0 {
			t.Fatal("the seed has no tagged threads; the test would prove nothing")
		}
		// Retagged, and moved back in time (an OTLP trace's earlier start).
		var first string
		if err := db.Get(&first, `SELECT id FROM threads ORDER BY created_at DESC, id DESC LIMIT 1`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(db.Rebind(`UPDATE threads SET tags = ? WHERE id = ?`), `["api","new"]`, first); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(db.Rebind(`UPDATE threads SET created_at = ? WHERE id = ?`), sqldb.Time(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)), first); err != nil {
			t.Fatal(err)
		}
		for _, tag := range []string{"web", "priority", "api", "new"} {
			want := expect(tag)
			check("updated", tag, want)
			if tag == "api" && want[len(want)-1] != first {
				t.Fatalf("the moved thread is not the oldest api thread: %v", want)
			}
		}
	})
}

// TestTagRowsGoWithTheThread: a thread deleted by plain SQL (a replica of a
// release before migration 00087, or an operator) takes its thread_tags
// rows with it (migration 00092's trigger), and the rows orphaned before
// that migration are removed by it, so the tag count stays right.
func TestTagRowsGoWithTheThread(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		seedList(t, db, 12)
		s := threadquery.New(db)
		ctx := context.Background()
		web := func() []string {
			var out []string
			if err := db.Select(&out, `SELECT id FROM threads t WHERE EXISTS (SELECT 1 FROM thread_tags g WHERE g.thread_id = t.id AND g.tag = 'web') ORDER BY id`); err != nil {
				t.Fatal(err)
			}
			return out
		}
		check := func(stage string) {
			t.Helper()
			want := len(web())
			if n, err := s.CountThreads(ctx, ports.ThreadFilter{Tag: "web"}, 100); err != nil || n != want {
				t.Fatalf("%s: tag web counts %d %v, want %d", stage, n, err, want)
			}
			var orphans int
			if err := db.Get(&orphans, `SELECT COUNT(*) FROM thread_tags g WHERE NOT EXISTS (SELECT 1 FROM threads t WHERE t.id = g.thread_id)`); err != nil {
				t.Fatal(err)
			}
			if orphans != 0 {
				t.Fatalf("%s: %d orphaned tag rows", stage, orphans)
			}
		}
		del := func(id string) {
			t.Helper()
			for _, q := range []string{`DELETE FROM thread_refs WHERE thread_id = ?`, `DELETE FROM threads WHERE id = ?`} {
				if _, err := db.Exec(db.Rebind(q), id); err != nil {
					t.Fatal(err)
				}
			}
		}
		before := web()
		if len(before) < 3 {
			t.Fatalf("the seed has %d web threads; the test would prove nothing", len(before))
		}
		del(before[0])
		check("deleted with the trigger")
		if got := len(web()); got != len(before)-1 {
			t.Fatalf("%d web threads after one deletion, want %d", got, len(before)-1)
		}
		// Before migration 00092: the deletion leaves the rows behind, and
		// the migration removes them.
		if _, err := db.MigrateDown(ctx, 91); err != nil {
			t.Fatal(err)
		}
		del(before[1])
		var left int
		if err := db.Get(&left, db.Rebind(`SELECT COUNT(*) FROM thread_tags WHERE thread_id = ?`), before[1]); err != nil || left == 0 {
			t.Fatalf("without the trigger the deleted thread kept %d tag rows (%v); the test would prove nothing", left, err)
		}
		if _, err := db.MigrateUp(ctx, 0); err != nil {
			t.Fatal(err)
		}
		check("migrated")
		if got := len(web()); got != len(before)-2 {
			t.Fatalf("%d web threads after two deletions, want %d", got, len(before)-2)
		}
	})
}

// orderBy DURATION sorts an active thread as 0 — its duration is known when
// it ends (threads.ended_duration_ms, migration 00106) — while the thread
// still reports its duration so far; keyset pages read the same list.
func TestDurationOrderSortsActiveThreadsAsZero(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		ctx := context.Background()
		at := sqldb.Time(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		for _, r := range []struct {
			id, status string
			ms         int64
		}{{"e1", "completed", 3000}, {"e2", "failed", 1000}, {"a1", "active", 9000}, {"e3", "completed", 0}, {"a2", "active", 500}} {
			if _, err := db.ExecContext(ctx, db.Rebind(`INSERT INTO threads (id, owner_kind, owner_id, status, created_at, updated_at, duration_ms)
 VALUES (?, 'user', 'u1', ?, ?, ?, ?)`), r.id, r.status, at, at, r.ms); err != nil {
				t.Fatal(err)
			}
		}
		s := threadquery.New(db)
		for _, c := range []struct {
			f    ports.ThreadFilter
			want []string
		}{
			// Ties (the actives and e3 at 0) newest first, then by id, descending.
			{ports.ThreadFilter{OrderBy: ports.OrderDuration}, []string{"e1", "e2", "e3", "a2", "a1"}},
			{ports.ThreadFilter{OrderBy: ports.OrderDuration, Ascending: true}, []string{"e3", "a2", "a1", "e2", "e1"}},
		} {
			all := c.f
			all.Limit = 10
			rows, err := s.ListThreads(ctx, all)
			if err != nil || !slices.Equal(ids(rows), c.want) {
				t.Fatalf("%+v: %v %v, want %v", c.f, ids(rows), err, c.want)
			}
			for _, r := range rows {
				if r.ID == "a1" && r.DurationMs != 9000 {
					t.Fatalf("active a1 reports duration %d, want its 9000 so far", r.DurationMs)
				}
			}
			if got := pageForwards(t, s, c.f, 2); !slices.Equal(ids(got), c.want) {
				t.Fatalf("%+v paged: %v, want %v", c.f, ids(got), c.want)
			}
		}
	})
}
