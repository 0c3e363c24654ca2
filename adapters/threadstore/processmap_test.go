package threadstore_test

import (
	"context"
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/adapters/threadstore"
	migrations "github.com/threadengine/engine/db"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

type mapRow struct {
	Kind   string    `db:"kind"`
	From   string    `db:"from_step"`
	To     string    `db:"to_step"`
	At     time.Time `db:"at"`
	Bucket int       `db:"bucket"`
	N      int64     `db:"n"`
}

type mapCell struct {
	kind, from, to string
	at             time.Time
	bucket         int
}

// The process map's day rows are always the sum of its hour rows (written
// in the same statements, rounds after rounds), the migration fills them
// from the hours in the same form (a later append adds to its rows rather
// than beside them), RebuildProcessMapDaily repairs days that drifted from
// their hours in the same form, and a map over a window of partial and whole days
// counts what summing the hour rows of the window counts.
func TestProcessMapDaysSumItsHours(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		ctx := context.Background()
		s := threadstore.New(db)
		t0 := time.Date(2026, 11, 24, 21, 10, 0, 0, time.UTC)
		round := func(r int) {
			t.Helper()
			var plans []ports.StepPlan
			for i := 0; i < 12; i++ {
				th := domain.Thread{ID: fmt.Sprintf("t%d-%02d", r, i), ContractName: "flow", ContractVersion: 1}
				prev, prevAt := "", time.Time{}
				at := t0.Add(time.Duration(r*7+i*5) * time.Hour)
				for j, step := range []string{"a", "b", "c"} {
					started := at
					at = at.Add(time.Duration(1+(i*3+j)%40) * time.Minute)
					fin := at
					plans = append(plans, ports.StepPlan{Thread: th, PrevActivityAt: prevAt,
						State:    ports.StepState{StepName: step, PreviousStep: prev},
						Activity: ports.Activity{StepName: step, StartedAt: &started, FinishedAt: &fin, RecordedAt: fin}})
					prev, prevAt = step, fin
				}
			}
			if err := s.WriteProcessMapForTest(ctx, plans); err != nil {
				t.Fatal(err)
			}
		}
		read := func(table, col string) map[mapCell]int64 {
			t.Helper()
			var rows []mapRow
			if err := db.Select(&rows, `SELECT kind, from_step, to_step, `+col+` AS at, bucket, n FROM `+table); err != nil {
				t.Fatal(err)
			}
			m := map[mapCell]int64{}
			for _, r := range rows {
				m[mapCell{r.Kind, r.From, r.To, r.At.UTC(), r.Bucket}] += r.N
			}
			if len(m) != len(rows) {
				t.Fatalf("%s: %d rows for %d keys", table, len(rows), len(m))
			}
			return m
		}
		byDay := func(hours map[mapCell]int64) map[mapCell]int64 {
			m := map[mapCell]int64{}
			for k, n := range hours {
				k.at = k.at.Truncate(24 * time.Hour)
				m[k] += n
			}
			return m
		}
		check := func(stage string) {
			t.Helper()
			if hours, days := read("process_map_hourly", "hour"), read("process_map_daily", "day"); !reflect.DeepEqual(byDay(hours), days) {
				t.Fatalf("%s: days %v, hours summed by day %v", stage, days, byDay(hours))
			}
		}
		for r := 0; r < 3; r++ {
			round(r)
		}
		check("appended")
		// The migration's fill, from the hours alone, then more appends.
		src, err := fs.ReadFile(map[sqldb.Dialect]fs.FS{sqldb.SQLite: migrations.SQLite, sqldb.Postgres: migrations.Postgres}[d], strings.ToLower(string(d))+"/00090_process_map_daily.sql")
		if err != nil {
			t.Fatal(err)
		}
		fill := string(src)[strings.Index(string(src), "INSERT INTO process_map_daily"):]
		fill = fill[:strings.Index(fill, ";")]
		if _, err := db.Exec(`DELETE FROM process_map_daily`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(fill); err != nil {
			t.Fatal(err)
		}
		check("filled by the migration")
		round(1)
		round(3)
		check("appended after the fill")
		// Days behind their hours (a replica of a release before 00090
		// appending during a rolling upgrade writes hour rows only), too
		// high, or missing: rebuild-process-map recomputes them, in the
		// form appends write (a later append adds to its rows).
		if _, err := db.Exec(db.Rebind(`INSERT INTO process_map_hourly (contract_name, contract_version, kind, from_step, to_step, hour, bucket, n, example_thread)
 VALUES ('flow', 1, 'E', 'a', 'b', ?, 3, 5, 'old-replica')`), sqldb.Time(t0.Add(30*time.Hour).Truncate(time.Hour))); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`UPDATE process_map_daily SET n = n + 7 WHERE kind = 'N'`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`DELETE FROM process_map_daily WHERE kind = 'E' AND from_step = ''`); err != nil {
			t.Fatal(err)
		}
		if hours, days := read("process_map_hourly", "hour"), read("process_map_daily", "day"); reflect.DeepEqual(byDay(hours), days) {
			t.Fatal("the corrupted days still sum their hours; the test would prove nothing")
		}
		n, err := threadquery.New(db).RebuildProcessMapDaily(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if days := read("process_map_daily", "day"); n != len(days) {
			t.Fatalf("rebuild reports %d rows, the table holds %d", n, len(days))
		}
		check("rebuilt")
		round(2)
		round(4)
		check("appended after the rebuild")

		// Windows of whole and partial days read what the hours hold.
		hours := read("process_map_hourly", "hour")
		q := threadquery.New(db)
		for _, w := range [][2]time.Time{
			{t0.Truncate(time.Hour), t0.Add(200 * time.Hour).Truncate(time.Hour)},
			{t0.Truncate(24 * time.Hour), t0.Add(96 * time.Hour).Truncate(24 * time.Hour)},
			{t0.Add(5 * time.Hour).Truncate(time.Hour), t0.Add(17 * time.Hour).Truncate(time.Hour)},
			{t0.Add(27 * time.Hour).Truncate(time.Hour), t0.Add(50 * time.Hour).Truncate(time.Hour)},
		} {
			want := map[mapCell]int64{}
			for k, n := range hours {
				if !k.at.Before(w[0]) && k.at.Before(w[1]) {
					k.at = time.Time{}
					want[k] += n
				}
			}
			rows, err := q.ProcessMapRows(ctx, "flow", 1, w[0], w[1])
			if err != nil {
				t.Fatal(err)
			}
			got := map[mapCell]int64{}
			for _, r := range rows {
				got[mapCell{r.Kind, r.From, r.To, time.Time{}, r.Bucket}] += r.Count
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("window %s – %s:\n got %v\nwant %v", w[0], w[1], got, want)
			}
		}
	})
}
