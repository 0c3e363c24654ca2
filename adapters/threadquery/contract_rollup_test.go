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
	"github.com/threadengine/engine/ports"
)

// contractStats from the roll-up answer what counting every thread answers:
// before any roll-up, after one, with threads ended after the watermark and
// still active, after deleting rolled-up threads, while a thread's health
// is still to be backfilled (the roll-up then waits), and refilled a day
// per call after migration 00092 reset a roll-up keyed on completed_at.
func TestContractStatsRollup(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		ctx := context.Background()
		now := time.Now().UTC()
		n := 0
		add := func(status, health string, ended time.Time, healthVersion int) string {
			t.Helper()
			n++
			id := fmt.Sprintf("t%03d", n)
			var completed any
			if status != "active" {
				completed = sqldb.Time(ended)
			}
			c := fmt.Sprintf("c%d", n%2)
			if _, err := db.Exec(db.Rebind(`INSERT INTO threads (id, contract_id, contract_name, contract_version, owner_kind, owner_id, status, health, health_version, created_at, updated_at, completed_at)
 VALUES (?, ?, ?, ?, 'user', 'u1', ?, ?, ?, ?, ?, ?)`), id, c, c, 1+n%3, status, health, healthVersion, sqldb.Time(ended.Add(-time.Hour)), sqldb.Time(ended), completed); err != nil {
				t.Fatal(err)
			}
			return id
		}
		var old []string
		for i := 0; i < 30; i++ {
			status := []string{"completed", "failed", "cancelled", "active"}[i%4]
			health := []string{"OK", "VIOLATED", "FAILED", "WARNING"}[i%3]
			old = append(old, add(status, health, now.Add(-time.Duration(48-i)*time.Hour), 1))
		}
		// A free-form thread is never counted.
		if _, err := db.Exec(db.Rebind(`INSERT INTO threads (id, owner_kind, owner_id, status, health_version, created_at, updated_at, completed_at) VALUES ('free', 'user', 'u1', 'completed', 1, ?, ?, ?)`),
			sqldb.Time(now.Add(-50*time.Hour)), sqldb.Time(now.Add(-50*time.Hour)), sqldb.Time(now.Add(-50*time.Hour))); err != nil {
			t.Fatal(err)
		}
		s := threadquery.New(db)
		type key struct {
			name           string
			version        int
			status, health string
		}
		raw := func() map[key]int {
			var rows []struct {
				Name    string `db:"contract_name"`
				Version int    `db:"contract_version"`
				Status  string `db:"status"`
				Health  string `db:"health"`
				N       int    `db:"n"`
			}
			if err := db.Select(&rows, `SELECT contract_name, contract_version, status, health, COUNT(*) AS n FROM threads
 WHERE contract_name IS NOT NULL GROUP BY contract_name, contract_version, status, health`); err != nil {
				t.Fatal(err)
			}
			m := map[key]int{}
			for _, r := range rows {
				m[key{r.Name, r.Version, r.Status, r.Health}] = r.N
			}
			return m
		}
		check := func(stage string) {
			t.Helper()
			got, err := s.ContractStats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// Fold the raw counts as ContractStats does.
			want := map[[2]any]ports.ContractStat{}
			for k, c := range raw() {
				w := want[[2]any{k.name, k.version}]
				w.Name, w.Version = k.name, k.version
				w.Threads += c
				switch k.status {
				case "active":
					w.Active += c
				case "completed":
					w.Completed += c
				case "failed":
					w.Failed += c
				case "cancelled":
					w.Cancelled += c
				}
				switch k.health {
				case "VIOLATED":
					w.Violated += c
				case "FAILED":
					w.HealthFailed += c
				case "WARNING":
					w.Warn += c
				}
				want[[2]any{k.name, k.version}] = w
			}
			gotM := map[[2]any]ports.ContractStat{}
			for _, g := range got {
				gotM[[2]any{g.Name, g.Version}] = g
			}
			if !reflect.DeepEqual(gotM, want) {
				t.Fatalf("%s:\n got %+v\nwant %+v", stage, gotM, want)
			}
		}
		rolled := func() int {
			var k int
			if err := db.Get(&k, `SELECT COUNT(*) FROM contract_stats_rollup`); err != nil {
				t.Fatal(err)
			}
			return k
		}
		check("raw")
		// A thread still to be backfilled holds the roll-up back.
		pending := add("completed", "OK", now.Add(-30*time.Hour), 0)
		if _, err := s.RollUp(ctx, now); err != nil {
			t.Fatal(err)
		}
		if rolled() != 0 {
			t.Fatal("rolled up while a thread's health is pending")
		}
		check("held back")
		if _, err := db.Exec(db.Rebind(`UPDATE threads SET health_version = 1, health = 'VIOLATED' WHERE id = ?`), pending); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RollUp(ctx, now); err != nil {
			t.Fatal(err)
		}
		if rolled() == 0 {
			t.Fatal("nothing rolled up")
		}
		check("rolled up")
		// Threads ended after the watermark and active ones are read raw.
		add("completed", "OK", now.Add(-time.Minute), 1)
		add("active", "WARNING", now.Add(-time.Minute), 1)
		check("ended since")
		// Deleting rolled-up threads (retention) subtracts them.
		gone, err := threadstore.New(db).DeleteThreads(ctx, old[:13])
		if err != nil || len(gone) != 13 {
			t.Fatalf("delete: %d %v", len(gone), err)
		}
		check("deleted")
		// A later roll-up takes the recent threads in, once.
		if _, err := s.RollUp(ctx, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		check("rolled again")
		if _, err := s.RollUp(ctx, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		check("rolled twice")

		// The roll-up as a release keyed on completed_at left it: threads
		// whose completed_at is before its watermark and updated_at at or
		// after it are counted in it and again from threads. Migration
		// 00092 empties it; it then refills a day of ended threads per
		// call from the oldest, exact after every call.
		mark := now.Add(-30 * time.Hour)
		if _, err := db.Exec(db.Rebind(`UPDATE threads SET completed_at = ? WHERE status <> 'active' AND updated_at >= ? AND updated_at < ?`),
			sqldb.Time(mark.Add(-time.Minute)), sqldb.Time(mark), sqldb.Time(mark.Add(3*time.Hour))); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{`DELETE FROM contract_stats_rollup`,
			`INSERT INTO contract_stats_rollup (contract_name, contract_version, status, health, threads)
 SELECT contract_name, COALESCE(contract_version, 0), status, health, COUNT(*) FROM threads
 WHERE contract_name IS NOT NULL AND status <> 'active' AND completed_at < ? GROUP BY contract_name, COALESCE(contract_version, 0), status, health`,
			`UPDATE stats_rollup SET rolled_until = ? WHERE name = 'threads'`} {
			var args []any
			if q != `DELETE FROM contract_stats_rollup` {
				args = append(args, sqldb.Time(mark))
			}
			if _, err := db.Exec(db.Rebind(q), args...); err != nil {
				t.Fatal(err)
			}
		}
		var twice int
		if err := db.Get(&twice, db.Rebind(`SELECT COUNT(*) FROM threads WHERE contract_name IS NOT NULL AND status <> 'active'
 AND completed_at < ? AND updated_at >= ?`), sqldb.Time(mark), sqldb.Time(mark)); err != nil || twice == 0 {
			t.Fatalf("%d threads counted twice (%v); the test would prove nothing", twice, err)
		}
		if _, err := db.MigrateDown(ctx, 91); err != nil {
			t.Fatal(err)
		}
		if _, err := db.MigrateUp(ctx, 0); err != nil {
			t.Fatal(err)
		}
		check("reset by the migration")
		inRollup := func() (sum, ended int) {
			t.Helper()
			if err := db.Get(&sum, `SELECT COALESCE(SUM(threads), 0) FROM contract_stats_rollup`); err != nil {
				t.Fatal(err)
			}
			if err := db.Get(&ended, `SELECT COUNT(*) FROM threads WHERE contract_name IS NOT NULL AND status <> 'active'
 AND updated_at < (SELECT rolled_until FROM stats_rollup WHERE name = 'threads')`); err != nil {
				t.Fatal(err)
			}
			return sum, ended
		}
		var total int
		if err := db.Get(&total, `SELECT COUNT(*) FROM threads WHERE contract_name IS NOT NULL AND status <> 'active'`); err != nil {
			t.Fatal(err)
		}
		calls, last := 0, -1
		for {
			if _, err := s.RollUp(ctx, now.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			check(fmt.Sprintf("refilled, call %d", calls+1))
			sum, ended := inRollup()
			if sum != ended {
				t.Fatalf("call %d: the roll-up holds %d threads, %d ended before its watermark", calls+1, sum, ended)
			}
			if sum == last {
				break
			}
			calls, last = calls+1, sum
			if calls > 10 {
				t.Fatal("the refill does not end")
			}
		}
		if last != total || calls < 2 {
			t.Fatalf("refilled %d of %d ended threads in %d calls, want all in more than one", last, total, calls)
		}
	})
}

// A contract-bound trace thread that fails ends with completed_at at its
// last span's end, which can be behind the roll-up's watermark (an exporter
// that batched for minutes). The roll-up keys on when the thread ended in
// the engine (updated_at), so contractStats counts it from its end on, a
// later roll-up takes it in once, and deleting it subtracts exactly it.
func TestContractStatsCountTraceEndedBehindTheWatermark(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Microsecond)
		s := threadquery.New(db)
		if _, err := s.RollUp(ctx, now); err != nil { // the watermark is now − RollupLag
			t.Fatal(err)
		}
		lastSpanEnd := now.Add(-20 * time.Minute)
		if _, err := db.Exec(db.Rebind(`INSERT INTO threads (id, contract_id, contract_name, contract_version, owner_kind, owner_id, status, health, health_version, created_at, updated_at, trace_root_ended_at)
 VALUES ('tr1', 'tr', 'tr', 1, 'service_account', 'sa1', 'active', 'OK', 1, ?, ?, ?)`),
			sqldb.Time(now.Add(-2*time.Hour)), sqldb.Time(now.Add(-time.Minute)), sqldb.Time(lastSpanEnd)); err != nil {
			t.Fatal(err)
		}
		store := threadstore.New(db)
		th, err := store.UpdateThread(ctx, "tr1", func(th *domain.Thread) (ports.ThreadEffects, error) {
			if !th.EndTrace([]domain.SpanNode{{SpanID: "r", StepName: "root", Failed: true, End: lastSpanEnd}}, 30*time.Second, now) {
				t.Fatal("the trace did not end")
			}
			return ports.ThreadEffects{}, nil
		})
		if err != nil || th.Status != domain.ThreadFailed || !th.CompletedAt.Equal(lastSpanEnd) {
			t.Fatalf("ended %s at %v, %v", th.Status, th.CompletedAt, err)
		}
		failed := func(stage string, want int) {
			t.Helper()
			stats, err := s.ContractStats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := 0
			for _, c := range stats {
				if c.Name == "tr" {
					got = c.Failed
				}
			}
			if got != want {
				t.Errorf("%s: contractStats counts %d failed, want %d", stage, got, want)
			}
			var negative int
			if err := db.Get(&negative, `SELECT COUNT(*) FROM contract_stats_rollup WHERE threads < 0`); err != nil {
				t.Fatal(err)
			}
			if negative != 0 {
				t.Errorf("%s: %d roll-up rows below zero", stage, negative)
			}
		}
		failed("ended", 1)
		if _, err := s.RollUp(ctx, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		failed("rolled up", 1)
		if _, err := s.RollUp(ctx, now.Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		failed("rolled again", 1)
		if gone, err := store.DeleteThreads(ctx, []string{"tr1"}); err != nil || len(gone) != 1 {
			t.Fatalf("delete: %v %v", gone, err)
		}
		failed("deleted", 0)
	})
}
