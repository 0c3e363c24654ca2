package threadquery_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/ports"
)

// The hourly roll-up answers exactly what the raw rows answer: before any
// roll-up, after a partial catch-up, after a full one, with windows that
// start inside an hour, and with steps recorded after the watermark.
func TestStepStatsRollup(t *testing.T) {
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			db := sqldbtest.Open(t, d)
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Hour).Add(20 * time.Minute)
			base := now.Add(-40 * time.Hour)
			type ev struct {
				at                       time.Time
				contract                 string
				step                     string
				failed, violated, warned bool
			}
			var evs []ev
			for i, c := range []string{"c", "c", "other", ""} {
				id := fmt.Sprintf("t%d", i)
				var name, version any
				if c != "" {
					name, version = c, 1
				}
				if _, err := db.Exec(db.Rebind(`INSERT INTO threads (id, contract_id, contract_name, contract_version, owner_kind, owner_id, status, created_at, updated_at)
 VALUES (?, ?, ?, ?, 'user', 'u1', 'active', ?, ?)`), id, name, name, version, sqldb.Time(base), sqldb.Time(base)); err != nil {
					t.Fatal(err)
				}
				for k := 0; k < 150; k++ {
					e := ev{at: base.Add(time.Duration(k*16+i) * time.Minute), contract: c, step: fmt.Sprintf("s%d", k%4),
						failed: k%3 == 0, violated: c != "" && k%4 == 1, warned: c != "" && k%5 == 2 && k%4 != 1}
					if e.at.After(now) {
						break
					}
					evs = append(evs, e)
					status := "success"
					if e.failed {
						status = "failed"
					}
					aid := fmt.Sprintf("a%d-%d", i, k)
					if _, err := db.Exec(db.Rebind(`INSERT INTO thread_activities (id, thread_id, seq, step_name, idempotency_key, status, attempt, recorded_at, content_hash, hash)
 VALUES (?, ?, ?, ?, 'k', ?, 1, ?, 'c', 'h')`), aid, id, k+1, e.step, status, sqldb.Time(e.at)); err != nil {
						t.Fatal(err)
					}
					if c != "" {
						overall := "passed"
						if e.violated {
							overall = "violated"
						} else if e.warned {
							overall = "warning"
						}
						if _, err := db.Exec(db.Rebind(`INSERT INTO thread_validations (id, thread_id, step_id, step_name, idempotency_key, overall_status, created_at)
 VALUES (?, ?, ?, ?, 'k', ?, ?)`), "v"+aid, id, aid, e.step, overall, sqldb.Time(e.at)); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			want := func(contract string, since time.Time) map[string]ports.StepStat {
				m := map[string]ports.StepStat{}
				for _, e := range evs {
					if (contract != "" && e.contract != contract) || e.at.Before(since) {
						continue
					}
					s := m[e.step]
					s.StepName = e.step
					s.Attempts++
					if e.failed {
						s.Failed++
					}
					if e.violated {
						s.Violated++
					}
					if e.warned {
						s.Warnings++
					}
					m[e.step] = s
				}
				return m
			}
			s := threadquery.New(db)
			check := func(stage string) {
				t.Helper()
				got, err := s.StepStats(ctx, "c", 1)
				if err != nil {
					t.Fatal(err)
				}
				w := want("c", time.Time{})
				if len(got) != len(w) {
					t.Fatalf("%s: StepStats %+v, want %+v", stage, got, w)
				}
				for _, g := range got {
					if x := w[g.StepName]; g.Attempts != x.Attempts || g.Failed != x.Failed || g.Violated != x.Violated || g.Warnings != x.Warnings {
						t.Fatalf("%s: StepStats %s = %+v, want %+v", stage, g.StepName, g, x)
					}
				}
				for _, since := range []time.Time{now.Add(-24 * time.Hour), now.Add(-7*time.Hour - 13*time.Minute), now.Add(-90 * time.Minute), base.Add(-time.Hour)} {
					got, err := s.StepsSince(ctx, since, 10)
					if err != nil {
						t.Fatal(err)
					}
					w := want("", since)
					if len(got) != len(w) {
						t.Fatalf("%s: StepsSince(%s) %+v, want %+v", stage, since, got, w)
					}
					for _, g := range got {
						if x := w[g.StepName]; g.Attempts != x.Attempts || g.Failed != x.Failed || g.Violated != x.Violated || g.Warnings != x.Warnings {
							t.Fatalf("%s: StepsSince(%s) %s = %+v, want %+v", stage, since, g.StepName, g, x)
						}
					}
				}
			}
			check("raw")
			n, err := s.RollUp(ctx, now)
			if err != nil || n != threadquery.RollupHoursPerCall {
				t.Fatalf("first roll-up: %d hours, %v", n, err)
			}
			check("partly rolled up")
			if n, err = s.RollUp(ctx, now); err != nil || n != 40-threadquery.RollupHoursPerCall {
				t.Fatalf("second roll-up: %d hours, %v", n, err)
			}
			var rows int
			if err := db.Get(&rows, `SELECT COUNT(*) FROM step_stats_hourly`); err != nil || rows < 40 {
				t.Fatalf("%d rolled-up rows, %v", rows, err)
			}
			check("rolled up")
			if n, err = s.RollUp(ctx, now); err != nil || n != 0 {
				t.Fatalf("nothing left: %d, %v", n, err)
			}
			// Re-rolling an hour (a replica that lost the race) changes nothing.
			if _, err := db.Exec(db.Rebind(`UPDATE stats_rollup SET rolled_until = ?`), sqldb.Time(now.Truncate(time.Hour).Add(-5*time.Hour))); err != nil {
				t.Fatal(err)
			}
			check("watermark moved back")
			if n, err = s.RollUp(ctx, now); err != nil || n != 5 {
				t.Fatalf("re-roll: %d, %v", n, err)
			}
			check("re-rolled")
			// Totals that drifted (hours an older replica rolled up without
			// adding them) are rebuilt from the hourly rows.
			if _, err := db.Exec(`UPDATE step_stats_total SET attempts = attempts + 7, failed = 0`); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(db.Rebind(`DELETE FROM step_stats_total WHERE step_name = ?`), "s1"); err != nil {
				t.Fatal(err)
			}
			if got, err := s.StepStats(ctx, "c", 1); err != nil || len(got) == len(want("c", time.Time{})) && got[0].Failed == want("c", time.Time{})[got[0].StepName].Failed {
				t.Fatalf("the drift did not show (the rebuild would prove nothing): %+v %v", got, err)
			}
			rows, err = s.RebuildStepStatsTotal(ctx)
			if err != nil || rows == 0 {
				t.Fatalf("rebuild: %d rows, %v", rows, err)
			}
			check("rebuilt")
			if _, err := s.RollUp(ctx, now.Add(3*time.Hour)); err != nil {
				t.Fatal(err)
			}
			check("rolled up after the rebuild")
		})
	}
}
