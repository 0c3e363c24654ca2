package threadstore_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app/authz"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
)

// A step state row no longer keeps a copy of its latest attempt's context
// (migration 00100, issue 28): a new row holds the column's default '{}', a
// row the previous release wrote with a copy loses it at the step's next
// attempt, and the step's latest context is still read — from the attempt.
// The floor that migration raised refuses the binaries that read the copy.
func TestStepStateKeepsNoContextCopy(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			db := sqldbtest.Open(t, d)
			ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "admin", Role: domain.RoleAdmin})
			store := threadstore.New(db)
			app := threadsapp.New(store, nil, nil, []byte("secret"), slog.New(slog.NewTextHandler(io.Discard, nil))).Application()
			th, err := app.Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: "copy"})
			if err != nil {
				t.Fatal(err)
			}
			record := func(status, v string) {
				t.Helper()
				if _, err := app.Commands.RecordStep.Handle(ctx, threadsapp.RecordStepInput{ThreadID: th.ID, StepName: "pay",
					Status: status, IdempotencyKey: "k1", Context: map[string]string{"order": v}}); err != nil {
					t.Fatal(err)
				}
			}
			stored := func() string {
				t.Helper()
				var s string
				if err := db.GetContext(ctx, &s, db.Rebind(`SELECT CAST(latest_context AS TEXT) FROM thread_step_states WHERE thread_id = ?`), th.ID); err != nil {
					t.Fatal(err)
				}
				return s
			}
			latest := func() string {
				t.Helper()
				st, err := store.ListStepStates(ctx, th.ID)
				if err != nil || len(st) != 1 {
					t.Fatalf("step states %+v %v", st, err)
				}
				return st[0].LatestContext["order"]
			}

			record("failed", "first")
			if got := stored(); got != "{}" {
				t.Fatalf("a new step state row stores latest_context %s, want {}", got)
			}
			if got := latest(); got != "first" {
				t.Fatalf("latest context %q, want the attempt's", got)
			}
			// The previous release still writes the copy during a rolling
			// upgrade; this release's next attempt of the step drops it.
			if _, err := db.DB.ExecContext(ctx, db.Rebind(`UPDATE thread_step_states SET latest_context = ? WHERE thread_id = ?`),
				`{"order": "first"}`, th.ID); err != nil {
				t.Fatal(err)
			}
			record("success", "second")
			if got := stored(); got != "{}" {
				t.Fatalf("an updated step state row stores latest_context %s, want {}", got)
			}
			if got := latest(); got != "second" {
				t.Fatalf("latest context %q after the retry, want the second attempt's", got)
			}
			c, err := db.ReadCompat(ctx)
			if err != nil || c.MinBinary != sqldb.EmbeddedFloorOf(d) || c.Err() != nil {
				t.Fatalf("schema window %+v %v: want the floor at %d", c, err, sqldb.EmbeddedFloorOf(d))
			}
		})
	}
}
