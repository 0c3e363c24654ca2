package threadstore_test

import (
	"testing"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// A passed validation result without issues is written only in the compact
// form, validation_status = 'passed' on its attempt (migration 00102, the
// contract step of 00101's expand, issue 28); every other result (violated,
// warning, an alert's) is a thread_validations row, and no attempt has both.
// The readers count each result once. 00102's Down turns the compact results
// back into rows (what binaries below 101 read) and restores the floor.
func TestValidationsWrittenCompactly(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		f := newEraseFixture(t, d)
		th := f.populate(t, "compact", true) // a failed (violated), a retried and b (passed), an alert (warning)
		ctx, db := f.ctx, f.db

		type attempt struct {
			ID      string  `db:"id"`
			Compact *string `db:"validation_status"`
			Rows    int     `db:"n"`
		}
		attempts := func() []attempt {
			t.Helper()
			var as []attempt
			if err := db.SelectContext(ctx, &as, db.Rebind(`SELECT a.id, a.validation_status,
 (SELECT COUNT(*) FROM thread_validations v WHERE v.thread_id = a.thread_id AND v.step_id = a.id) AS n
 FROM thread_activities a WHERE a.thread_id = ? ORDER BY a.seq`), th.ID); err != nil {
				t.Fatal(err)
			}
			return as
		}
		var passedRows int
		if err := db.GetContext(ctx, &passedRows, db.Rebind(`SELECT COUNT(*) FROM thread_validations
 WHERE thread_id = ? AND overall_status = 'passed' AND critical_count + warning_count + minor_count + info_count = 0`), th.ID); err != nil {
			t.Fatal(err)
		}
		if passedRows != 0 {
			t.Fatalf("%d passed results without issues written as rows, want none", passedRows)
		}
		compact, rows := 0, 0
		for _, a := range attempts() {
			if a.Compact != nil && a.Rows > 0 {
				t.Fatalf("attempt %s has both forms", a.ID)
			}
			if a.Compact != nil {
				if *a.Compact != domain.ValidationPassed {
					t.Fatalf("compact form %q", *a.Compact)
				}
				compact++
			}
			rows += a.Rows
		}
		if compact != 2 || rows != 1 {
			t.Fatalf("%d compact results and %d attempt rows, want 2 (a's retry, b) and 1 (a's failure)", compact, rows)
		}
		q := threadquery.New(db)
		total := func() int {
			t.Helper()
			vs, err := q.Validations(ctx, []string{th.ID}, ports.ValidationFilter{Limit: 50})
			if err != nil {
				t.Fatal(err)
			}
			counts, err := q.Counts(ctx, []string{th.ID})
			if err != nil || counts[th.ID].Validations != len(vs[th.ID]) {
				t.Fatalf("counts %+v %v, listed %d", counts, err, len(vs[th.ID]))
			}
			return len(vs[th.ID])
		}
		if n := total(); n != 4 { // 2 compact, a's violated row, the alert's row
			t.Fatalf("%d validations read, want 4", n)
		}

		// 00102's Down: rows again, and the floor before it.
		if _, err := db.MigrateDown(ctx, 101); err != nil {
			t.Fatal(err)
		}
		for _, a := range attempts() {
			if a.Compact != nil {
				t.Fatalf("attempt %s keeps its compact result after the Down", a.ID)
			}
		}
		if n := total(); n != 4 {
			t.Fatalf("%d validations read after the Down, want 4", n)
		}
		want := int64(92)
		if d == sqldb.SQLite {
			want = 99 // 00099's trigger
		}
		if c, err := db.ReadCompat(ctx); err != nil || c.Database != 101 || c.MinBinary != want {
			t.Fatalf("after 00102's Down: %+v %v, want floor %d", c, err, want)
		}
	})
}
