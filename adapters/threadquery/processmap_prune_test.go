package threadquery_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/insights"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

type pmClock struct{ t time.Time }

func (c pmClock) Now() time.Time { return c.t }

type pmContracts struct{}

func (pmContracts) GetContract(_ context.Context, name string, version int) (domain.Contract, error) {
	return domain.Contract{Name: name, Version: 1, EntryPoints: []string{"a"}, Steps: []domain.ContractStep{{Name: "a", Type: "managed"}}}, nil
}

// The process map keeps its hour rows for ports.ProcessMapHourlyKept (issue
// 28: they were most of its space): once the floor excludes the binaries
// that read older ones, the roll-up job deletes the older ones once an hour, their days' rows stay, the day rows' rebuild leaves the days
// before the bound alone (their hours are gone), and a map whose window
// ends before the kept span is widened to whole UTC days, counted from the
// day rows; a recent window still reads whole hours. The hours of the day
// before the 7 days are kept too (the prune bound is a day earlier than
// the widening's horizon): a window ending there is widened all the same.
func TestProcessMapHourRowsPruned(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleAdmin})
		now := time.Now().UTC().Truncate(time.Hour).Add(30 * time.Minute)
		const day = 24 * time.Hour
		oldDay := now.Truncate(day).Add(-12 * day)
		recentDay := now.Truncate(day).Add(-2 * day)
		// The first day the prune keeps (ports.ProcessMapHourlyPruned: 8
		// days before today), all before the 7 days windows read by the
		// hour (ports.ProcessMapHourlyHorizon): a window ending in it is
		// widened to whole days, and its hour rows are still there.
		keptDay := now.Truncate(day).Add(-8 * day)
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := db.ExecContext(ctx, db.Rebind(q), args...); err != nil {
				t.Fatal(err)
			}
		}
		// Two hours of each day, 3 and 4 first steps; the day rows their sums.
		for _, dd := range []time.Time{oldDay, keptDay, recentDay} {
			for i, h := range []time.Duration{5 * time.Hour, 9 * time.Hour} {
				exec(`INSERT INTO process_map_hourly (contract_name, contract_version, kind, from_step, to_step, hour, bucket, n, example_thread)
 VALUES ('flow', 1, 'E', '', 'a', ?, 2, ?, 'x')`, sqldb.Time(dd.Add(h)), 3+i)
			}
			exec(`INSERT INTO process_map_daily (contract_name, contract_version, kind, from_step, to_step, day, bucket, n, example_thread)
 VALUES ('flow', 1, 'E', '', 'a', ?, 2, 7, 'x')`, sqldb.Time(dd))
		}
		exec(`INSERT INTO stats_rollup (name, rolled_until) VALUES ('steps', ?)`, sqldb.Time(now.Add(-3*time.Hour).Truncate(time.Hour)))
		q := threadquery.New(db)
		count := func(table, col string, from time.Time) int {
			t.Helper()
			var n int
			if err := db.GetContext(ctx, &n, db.Rebind(`SELECT COUNT(*) FROM `+table+` WHERE `+col+` >= ? AND `+col+` < ?`),
				sqldb.Time(from), sqldb.Time(from.Add(day))); err != nil {
				t.Fatal(err)
			}
			return n
		}
		// While binaries older than 00102 may serve (a database whose
		// floor is still 101: before 00108, or after its Down), nothing is
		// pruned: they read the hour rows of any window and rebuild every
		// day from them.
		exec(`UPDATE schema_compat SET min_binary_schema = ? WHERE id = 1`, threadquery.ProcessMapPruneFloor-1)
		if _, err := q.RollUp(ctx, now.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		if o := count("process_map_hourly", "hour", oldDay); o != 2 {
			t.Fatalf("old hour rows pruned under the floor of %d: %d left", threadquery.ProcessMapPruneFloor-1, o)
		}
		// From the floor ProcessMapPruneFloor on (00108's, the embedded
		// floor), the next hour's roll-up prunes.
		if sqldb.EmbeddedFloorOf(d) < threadquery.ProcessMapPruneFloor {
			t.Fatalf("the migrations leave the floor at %d, below the prune's %d", sqldb.EmbeddedFloorOf(d), threadquery.ProcessMapPruneFloor)
		}
		exec(`UPDATE schema_compat SET min_binary_schema = ? WHERE id = 1`, sqldb.EmbeddedFloorOf(d))
		if _, err := q.RollUp(ctx, now); err != nil {
			t.Fatal(err)
		}
		if o, k, r := count("process_map_hourly", "hour", oldDay), count("process_map_hourly", "hour", keptDay), count("process_map_hourly", "hour", recentDay); o != 0 || k != 2 || r != 2 {
			t.Fatalf("hour rows after the roll-up: old day %d, first kept day %d, recent day %d; want 0, 2 and 2", o, k, r)
		}
		if o, k, r := count("process_map_daily", "day", oldDay), count("process_map_daily", "day", keptDay), count("process_map_daily", "day", recentDay); o != 1 || k != 1 || r != 1 {
			t.Fatalf("day rows after the roll-up: %d, %d, %d; want all kept", o, k, r)
		}

		// The rebuild recomputes the kept days only.
		exec(`UPDATE process_map_daily SET n = 100`)
		if _, err := q.RebuildProcessMapDaily(ctx); err != nil {
			t.Fatal(err)
		}
		var ns []int64
		if err := db.SelectContext(ctx, &ns, `SELECT n FROM process_map_daily ORDER BY day`); err != nil {
			t.Fatal(err)
		}
		if len(ns) != 3 || ns[0] != 100 || ns[1] != 7 || ns[2] != 7 {
			t.Fatalf("day rows after the rebuild %v, want the old one left (100) and the kept ones recomputed (7, 7)", ns)
		}
		exec(`UPDATE process_map_daily SET n = 7`)

		h := insights.NewProcessMapHandler(q, pmContracts{}, pmClock{now})
		iso := func(t time.Time) string { return t.Format(time.RFC3339) }
		m, err := h.Handle(ctx, "flow", 1, iso(oldDay.Add(8*time.Hour)), iso(oldDay.Add(10*time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		if !m.Since.Equal(oldDay) || !m.Until.Equal(oldDay.Add(day)) || m.Started != 7 {
			t.Fatalf("an old window: [%s, %s) started %d; want the whole day [%s, %s) and 7", m.Since, m.Until, m.Started, oldDay, oldDay.Add(day))
		}
		// A window ending between the prune bound and the horizon: whole
		// days, as any end before the horizon, though its hours are kept.
		end := keptDay.Add(10 * time.Hour)
		if end.Before(ports.ProcessMapHourlyPruned(now)) || !end.Before(ports.ProcessMapHourlyHorizon(now)) {
			t.Fatalf("%s is not between the prune bound %s and the horizon %s", end, ports.ProcessMapHourlyPruned(now), ports.ProcessMapHourlyHorizon(now))
		}
		m, err = h.Handle(ctx, "flow", 1, iso(keptDay.Add(8*time.Hour)), iso(end))
		if err != nil {
			t.Fatal(err)
		}
		if !m.Since.Equal(keptDay) || !m.Until.Equal(keptDay.Add(day)) || m.Started != 7 {
			t.Fatalf("a window ending in the first kept day: [%s, %s) started %d; want the whole day [%s, %s) and 7", m.Since, m.Until, m.Started, keptDay, keptDay.Add(day))
		}
		// Starting there and ending after the horizon: its start widened to
		// the day, its end a whole hour (the day's row and no hour of it).
		until := now.Add(-7*day + time.Hour).Truncate(time.Hour).Add(time.Hour)
		m, err = h.Handle(ctx, "flow", 1, iso(keptDay.Add(8*time.Hour)), iso(now.Add(-7*day+time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		if !m.Since.Equal(keptDay) || !m.Until.Equal(until) || m.Started != 7 {
			t.Fatalf("a window from the first kept day past the horizon: [%s, %s) started %d; want [%s, %s) and 7", m.Since, m.Until, m.Started, keptDay, until)
		}
		m, err = h.Handle(ctx, "flow", 1, iso(recentDay.Add(8*time.Hour)), iso(recentDay.Add(10*time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		if !m.Since.Equal(recentDay.Add(8*time.Hour)) || !m.Until.Equal(recentDay.Add(10*time.Hour)) || m.Started != 4 {
			t.Fatalf("a recent window: [%s, %s) started %d; want its hours and 4", m.Since, m.Until, m.Started)
		}
		if b := ports.ProcessMapHourlyPruned(now); !b.After(oldDay) || b.After(recentDay) {
			t.Fatalf("prune bound %s", b)
		}
	})
}

// TestProcessMapHourPruneGoesAWeekACall: the first prune after the floor
// rises finds the whole history's hour rows; each roll-up call deletes at
// most a week of days from the oldest row on (one statement of a year's
// rows would hold SQLite's only writer for half a minute or more), and the
// following hours' calls go on to the bound; a stray row decades old costs
// one call, not a walk through the decades.
func TestProcessMapHourPruneGoesAWeekACall(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Hour).Add(30 * time.Minute)
		const day = 24 * time.Hour
		today := now.Truncate(day)
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := db.ExecContext(ctx, db.Rebind(q), args...); err != nil {
				t.Fatal(err)
			}
		}
		// Days ago, an hour row each; the first a stray far in the past (a
		// client's finishedAt of 0), which must not be walked a week a call.
		stray := int(today.Sub(time.Unix(0, 0).UTC()) / day)
		days := []int{stray, 40, 30, 20, 12, 2}
		for _, ago := range days {
			exec(`INSERT INTO process_map_hourly (contract_name, contract_version, kind, from_step, to_step, hour, bucket, n, example_thread)
 VALUES ('flow', 1, 'E', '', 'a', ?, 2, 1, 'x')`, sqldb.Time(today.Add(-time.Duration(ago)*day+5*time.Hour)))
		}
		exec(`UPDATE schema_compat SET min_binary_schema = ? WHERE id = 1`, sqldb.EmbeddedFloorOf(d))
		exec(`INSERT INTO stats_rollup (name, rolled_until) VALUES ('steps', ?)`, sqldb.Time(now.Add(-3*time.Hour).Truncate(time.Hour)))
		left := func() []int { // the days (ago) whose hour row is still there
			t.Helper()
			var out []int
			for _, ago := range days {
				from := today.Add(-time.Duration(ago) * day)
				var n int
				if err := db.GetContext(ctx, &n, db.Rebind(`SELECT COUNT(*) FROM process_map_hourly WHERE hour >= ? AND hour < ?`),
					sqldb.Time(from), sqldb.Time(from.Add(day))); err != nil {
					t.Fatal(err)
				}
				if n > 0 {
					out = append(out, ago)
				}
			}
			return out
		}
		q := threadquery.New(db)
		// Each call an hour later, so that it rolls an hour up and prunes.
		for i, want := range [][]int{{40, 30, 20, 12, 2}, {30, 20, 12, 2}, {20, 12, 2}, {12, 2}, {2}, {2}} {
			if _, err := q.RollUp(ctx, now.Add(time.Duration(i)*time.Hour)); err != nil {
				t.Fatal(err)
			}
			if got := left(); !slices.Equal(got, want) {
				t.Fatalf("after call %d the hour rows of %v days ago are left, want %v", i+1, got, want)
			}
		}
	})
}
