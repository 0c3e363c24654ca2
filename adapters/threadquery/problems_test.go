package threadquery_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/domain"
)

// problemCause is a Problems row's key without the example.
type problemCause struct {
	hour          time.Time
	name          string
	version       int
	rule, step, c string
}

// The Problems rows read from the roll-up and the threads in flight count
// exactly what a count over threads counts, per start hour and cause: before
// any roll-up, while a health backfill holds it back, after it, for threads
// ended exactly at and just before the watermark, still active, after
// deleting rolled-up threads (their examples go with them), and rolled
// again. A truncated read keeps the newest hours.
func TestProblemRowsEqualACountOverThreads(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		ctx := context.Background()
		now := time.Date(2026, 11, 27, 12, 30, 0, 0, time.UTC)
		n := 0
		// add writes a thread started at created, last written (ended, when
		// status is not active) at updated.
		add := func(contract string, status, health, rule, step, msg string, created, updated time.Time, healthVersion int) string {
			t.Helper()
			n++
			id := fmt.Sprintf("t%03d", n)
			var completed, name, version, fit, fis, fim any
			if status != "active" {
				completed = sqldb.Time(updated)
			}
			if contract != "" {
				name, version = contract, 1+n%2
			}
			if rule != "" {
				fit, fis, fim = rule, step, msg
			}
			if _, err := db.Exec(db.Rebind(`INSERT INTO threads (id, contract_id, contract_name, contract_version, owner_kind, owner_id, status,
 health, health_version, first_issue_type, first_issue_step, first_issue_message, created_at, updated_at, completed_at)
 VALUES (?, ?, ?, ?, 'user', 'u1', ?, ?, ?, ?, ?, ?, ?, ?, ?)`), id, name, name, version, status, health, healthVersion, fit, fis, fim,
				sqldb.Time(created), sqldb.Time(updated), completed); err != nil {
				t.Fatal(err)
			}
			return id
		}
		var old []string
		for i := 0; i < 40; i++ {
			created := now.Add(-time.Duration(30-i%25) * time.Hour).Add(time.Duration(i) * time.Minute)
			status := []string{"completed", "failed", "cancelled", "active"}[i%4]
			health := []string{"OK", "VIOLATED", "FAILED", "WARNING", "FAILED"}[i%5]
			contract, rule, step, msg := fmt.Sprintf("c%d", i%2), []string{"invalid_transition", "content_rule", "step_failed"}[i%3], fmt.Sprintf("s%d", i%3), ""
			if i%4 == 1 {
				// Free-form: messages differing only by their ids are one cause.
				contract, msg = "", fmt.Sprintf("payment %d declined for order %08x-aaaa-bbbb-cccc-dddddddddddd", 1000+i, i)
			}
			old = append(old, add(contract, status, health, rule, step, msg, created, created.Add(time.Duration(i)*time.Minute), 1))
		}
		// One cause in two hours of one day (two hour rows, one day row),
		// and a third thread of the first hour ended after the first
		// roll-ups: rolled up later, it adds to the existing hour row
		// (the roll-up's upsert updates it, and its trigger the day row).
		twins := []string{add("c0", "failed", "FAILED", "step_failed", "twin", "", now.Add(-26*time.Hour), now.Add(-26*time.Hour+time.Minute), 1),
			add("c0", "failed", "FAILED", "step_failed", "twin", "", now.Add(-25*time.Hour), now.Add(-25*time.Hour+time.Minute), 1),
			add("c0", "failed", "FAILED", "step_failed", "twin", "", now.Add(-26*time.Hour+5*time.Minute), now.Add(-time.Minute), 1)}
		if _, err := db.Exec(db.Rebind(`UPDATE threads SET contract_version = 1 WHERE id IN (?, ?, ?)`), twins[0], twins[1], twins[2]); err != nil {
			t.Fatal(err)
		}
		s := threadquery.New(db)
		since, until := now.Add(-48*time.Hour).Truncate(time.Hour), now.Truncate(time.Hour).Add(time.Hour)
		raw := func() map[problemCause]int {
			t.Helper()
			var rows []struct {
				Created time.Time `db:"created_at"`
				Name    string    `db:"contract_name"`
				Version int       `db:"contract_version"`
				Rule    string    `db:"rule"`
				Step    string    `db:"step"`
				Msg     string    `db:"msg"`
			}
			if err := db.Select(&rows, db.Rebind(`SELECT created_at, COALESCE(contract_name, '') AS contract_name,
 COALESCE(contract_version, 0) AS contract_version, COALESCE(first_issue_type, '') AS rule, COALESCE(first_issue_step, '') AS step,
 COALESCE(first_issue_message, '') AS msg FROM threads WHERE health IN ('FAILED', 'VIOLATED') AND created_at >= ? AND created_at < ?`),
				sqldb.Time(since), sqldb.Time(until)); err != nil {
				t.Fatal(err)
			}
			m := map[problemCause]int{}
			for _, r := range rows {
				k := problemCause{r.Created.UTC().Truncate(time.Hour), r.Name, r.Version, r.Rule, r.Step, ""}
				if r.Name == "" {
					k.c = domain.MessageClass(r.Msg)
				}
				m[k]++
			}
			return m
		}
		exists := func(id string) bool {
			var k int
			if err := db.Get(&k, db.Rebind(`SELECT COUNT(*) FROM threads WHERE id = ?`), id); err != nil {
				t.Fatal(err)
			}
			return k == 1
		}
		check := func(stage string) {
			t.Helper()
			rows, err := s.ProblemRows(ctx, since, until, time.Hour, 10000)
			if err != nil {
				t.Fatal(err)
			}
			got := map[problemCause]int{}
			for _, r := range rows {
				got[problemCause{r.Start, r.ContractName, r.ContractVersion, r.Rule, r.Step, r.MessageClass}] += r.Count
				if r.Example != "" && !exists(r.Example) {
					t.Fatalf("%s: example %s of %+v is deleted", stage, r.Example, r)
				}
			}
			if want := raw(); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s:\n got %v\nwant %v", stage, got, want)
			}
			// In buckets of 5 hours from since (hours only), of 24 hours
			// (from 12:00: no day lies in one bucket) and of 36 hours (the
			// window's whole day, 26 November, is read from problems_daily).
			for _, width := range []time.Duration{5 * time.Hour, 24 * time.Hour, 36 * time.Hour} {
				rows, err = s.ProblemRows(ctx, since, until, width, 10000)
				if err != nil {
					t.Fatal(err)
				}
				got = map[problemCause]int{}
				for _, r := range rows {
					got[problemCause{r.Start, r.ContractName, r.ContractVersion, r.Rule, r.Step, r.MessageClass}] += r.Count
					if r.Example != "" && !exists(r.Example) {
						t.Fatalf("%s, %s buckets: example %s of %+v is deleted", stage, width, r.Example, r)
					}
				}
				want := map[problemCause]int{}
				for k, n := range raw() {
					k.hour = since.Add(k.hour.Sub(since) / width * width)
					want[k] += n
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s, %s buckets:\n got %v\nwant %v", stage, width, got, want)
				}
			}
			// Each day row is the sum of its hours, with the greatest of
			// their examples (migration 00093's triggers).
			type dayRow struct {
				Day     time.Time `db:"day"`
				Name    string    `db:"contract_name"`
				Version int       `db:"contract_version"`
				Rule    string    `db:"rule"`
				Step    string    `db:"step"`
				Class   string    `db:"message_class"`
				N       int       `db:"n"`
				Example string    `db:"example_thread"`
			}
			var hourly, daily []dayRow
			if err := db.Select(&hourly, `SELECT hour AS day, contract_name, contract_version, rule, step, message_class, n, example_thread
 FROM problems_hourly`); err != nil {
				t.Fatal(err)
			}
			if err := db.Select(&daily, `SELECT day, contract_name, contract_version, rule, step, message_class, n, example_thread
 FROM problems_daily WHERE n <> 0 OR example_thread <> ''`); err != nil {
				t.Fatal(err)
			}
			sums := map[dayRow]dayRow{}
			for _, h := range hourly {
				k := dayRow{Day: h.Day.UTC().Truncate(24 * time.Hour), Name: h.Name, Version: h.Version, Rule: h.Rule, Step: h.Step, Class: h.Class}
				a := sums[k]
				a.N += h.N
				a.Example = max(a.Example, h.Example)
				sums[k] = a
			}
			for k, a := range sums {
				if a.N == 0 && a.Example == "" {
					delete(sums, k)
				}
			}
			got2 := map[dayRow]dayRow{}
			for _, d := range daily {
				k := d
				k.Day, k.N, k.Example = d.Day.UTC(), 0, ""
				got2[k] = dayRow{N: d.N, Example: d.Example}
			}
			if !reflect.DeepEqual(got2, sums) {
				t.Fatalf("%s: problems_daily\n got %v\nwant %v", stage, got2, sums)
			}
		}
		rolled := func() int {
			t.Helper()
			var k int
			if err := db.Get(&k, `SELECT COALESCE(SUM(n), 0) FROM problems_hourly`); err != nil {
				t.Fatal(err)
			}
			return k
		}
		rollUp := func(at time.Time) {
			t.Helper()
			if _, err := s.RollUp(ctx, at); err != nil {
				t.Fatal(err)
			}
		}
		check("raw")
		classes := map[string]bool{}
		for k := range raw() {
			if k.name == "" {
				classes[k.c] = true
			}
		}
		if len(classes) != 1 {
			t.Fatalf("free-form causes %v, want one class", classes)
		}
		// A thread still to be backfilled holds the roll-up back.
		pending := add("c0", "failed", "OK", "", "", "", now.Add(-20*time.Hour), now.Add(-19*time.Hour), 0)
		rollUp(now)
		if rolled() != 0 {
			t.Fatal("rolled up while a thread's health is pending")
		}
		check("held back")
		if _, err := db.Exec(db.Rebind(`UPDATE threads SET health_version = 1, health = 'FAILED', first_issue_type = 'step_failed',
 first_issue_step = 'pay' WHERE id = ?`), pending); err != nil {
			t.Fatal(err)
		}
		// The watermark is now - RollupLag: a thread ended just before it is
		// rolled up, one ended exactly at it is read from threads.
		mark := now.Add(-threadquery.RollupLag)
		before := add("c1", "failed", "FAILED", "step_failed", "ship", "", now.Add(-2*time.Hour), mark.Add(-time.Microsecond), 1)
		at := add("c1", "failed", "FAILED", "step_failed", "ship", "", now.Add(-2*time.Hour), mark, 1)
		var want int
		if err := db.Get(&want, db.Rebind(`SELECT COUNT(*) FROM threads WHERE status <> 'active' AND health IN ('FAILED', 'VIOLATED')
 AND updated_at < ?`), sqldb.Time(mark)); err != nil {
			t.Fatal(err)
		}
		// The threads ended over more than a day: one call rolls up a day of
		// them (from the first one ended), exactly, and the next the rest.
		rollUp(now)
		if got := rolled(); got == 0 || got >= want {
			t.Fatalf("the first call rolled up %d of %d threads, want a day of them", got, want)
		}
		check("one day rolled up")
		rollUp(now)
		if got := rolled(); got != want {
			t.Fatalf("rolled up %d threads, %d ended before the watermark", got, want)
		}
		_, _ = before, at
		check("rolled up")
		// Threads ended after the watermark and active ones are read raw; an
		// active thread started before the window is not counted.
		add("c0", "failed", "VIOLATED", "content_rule", "pay", "", now.Add(-time.Hour), now.Add(-time.Minute), 1)
		add("", "active", "FAILED", "step_failed", "fetch", "timeout after 30s", now.Add(-time.Hour), now.Add(-time.Minute), 1)
		add("c0", "active", "VIOLATED", "content_rule", "pay", "", now.Add(-72*time.Hour), now.Add(-time.Minute), 1)
		check("ended since")
		// Deleting rolled-up threads (retention, erasure) subtracts them and
		// clears them as examples.
		gone, err := threadstore.New(db).DeleteThreads(ctx, append(old[:17], before))
		if err != nil || len(gone) != 18 {
			t.Fatalf("delete: %d %v", len(gone), err)
		}
		check("deleted")
		// Later roll-ups take the recent threads in, once.
		rollUp(now.Add(time.Hour))
		check("rolled again")
		if _, err := threadstore.New(db).DeleteThreads(ctx, []string{at}); err != nil {
			t.Fatal(err)
		}
		check("deleted at the watermark")
		rollUp(now.Add(time.Hour))
		check("rolled twice")

		// A truncated read keeps the newest hours.
		all, err := s.ProblemRows(ctx, since, until, time.Hour, 10000)
		if err != nil {
			t.Fatal(err)
		}
		cut, err := s.ProblemRows(ctx, since, until, time.Hour, 3)
		if err != nil || len(cut) != 3 || len(all) <= 3 {
			t.Fatalf("truncated: %d of %d rows, %v", len(cut), len(all), err)
		}
		newest := all[0].Start
		for _, r := range all {
			if r.Start.After(newest) {
				newest = r.Start
			}
		}
		if !cut[0].Start.Equal(newest) {
			t.Fatalf("truncated read starts at %s, the newest hour is %s", cut[0].Start, newest)
		}
		for i := 1; i < len(cut); i++ {
			if cut[i].Start.After(cut[i-1].Start) {
				t.Fatalf("not newest first: %v", cut)
			}
		}
	})
}

// Deleting a thread clears it as the process map's example, in the hours
// and days its steps were counted; the counts stay, and a row another
// thread is the example of keeps it.
func TestDeletedThreadIsNoProcessMapExample(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		ctx := context.Background()
		h1 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
		h2 := h1.Add(time.Hour)
		for _, id := range []string{"gone", "kept"} {
			if _, err := db.Exec(db.Rebind(`INSERT INTO threads (id, contract_id, contract_name, contract_version, owner_kind, owner_id, status,
 health_version, created_at, updated_at) VALUES (?, 'pm', 'pm', 1, 'user', 'u1', 'active', 1, ?, ?)`), id, sqldb.Time(h1), sqldb.Time(h2)); err != nil {
				t.Fatal(err)
			}
		}
		// "gone" reached a in hour 1 and b in hour 2 (finished_at), "kept"
		// reached a in hour 1.
		for i, a := range []struct {
			thread, step string
			at           time.Time
		}{{"gone", "a", h1.Add(10 * time.Minute)}, {"gone", "b", h2.Add(5 * time.Minute)}, {"kept", "a", h1.Add(20 * time.Minute)}} {
			if _, err := db.Exec(db.Rebind(`INSERT INTO thread_activities (id, thread_id, seq, step_name, idempotency_key, status, attempt,
 finished_at, recorded_at, content_hash, hash) VALUES (?, ?, ?, ?, 'k', 'success', 1, ?, ?, 'c', 'h')`),
				fmt.Sprint("act", i), a.thread, i+1, a.step, sqldb.Time(a.at), sqldb.Time(a.at.Add(time.Second))); err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range []struct {
			kind, from, to string
			hour           time.Time
			example        string
		}{{"N", "", "a", h1, "kept"}, {"E", "", "a", h1, "gone"}, {"N", "", "b", h2, "gone"}, {"E", "a", "b", h2, "gone"}, {"E", "a", "b", h1, "kept"}} {
			if _, err := db.Exec(db.Rebind(`INSERT INTO process_map_hourly (contract_name, contract_version, kind, from_step, to_step, hour, bucket, n, example_thread)
 VALUES ('pm', 1, ?, ?, ?, ?, 3, 2, ?)`), r.kind, r.from, r.to, sqldb.Time(r.hour), r.example); err != nil {
				t.Fatal(err)
			}
		}
		// The day rows, as appends write them: one example per row.
		for _, r := range []struct{ kind, from, to, example string }{{"N", "", "a", "kept"}, {"E", "", "a", "gone"}, {"N", "", "b", "gone"}, {"E", "a", "b", "gone"}} {
			if _, err := db.Exec(db.Rebind(`INSERT INTO process_map_daily (contract_name, contract_version, kind, from_step, to_step, day, bucket, n, example_thread)
 VALUES ('pm', 1, ?, ?, ?, ?, 3, 2, ?)`), r.kind, r.from, r.to, sqldb.Time(h1.Truncate(24*time.Hour)), r.example); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := threadstore.New(db).DeleteThreads(ctx, []string{"gone"}); err != nil {
			t.Fatal(err)
		}
		var left int
		if err := db.Get(&left, `SELECT COUNT(*) FROM process_map_daily WHERE example_thread = 'gone'`); err != nil || left != 0 {
			t.Fatalf("%d day rows still name the deleted thread (%v)", left, err)
		}
		rows, err := threadquery.New(db).ProcessMapRows(ctx, "pm", 1, h1, h2.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, r := range rows {
			got[r.Kind+r.From+">"+r.To] = fmt.Sprintf("%d %s", r.Count, r.Example)
		}
		// E a>b keeps hour 1's example; N b and E >a have none left.
		want := map[string]string{"N>a": "2 kept", "E>a": "2 ", "N>b": "2 ", "Ea>b": "4 kept"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
}
