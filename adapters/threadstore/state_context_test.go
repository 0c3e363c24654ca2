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

// A step state row keeps no copy of its latest attempt's context (issue
// 28): migration 00100 stopped writing it, schema 102's step-state upsert
// stopped naming thread_step_states.latest_context, and 00108 drops the
// column (floor 102). The test checks that the migrated schema has no such
// column and records a new step and a retry of it; the step's latest
// context is read from the attempt.
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
			if _, err := db.DB.ExecContext(ctx, `SELECT latest_context FROM thread_step_states`); err == nil {
				t.Fatal("thread_step_states.latest_context still exists after the migrations (00108 drops it)")
			}
			record := func(status, v string) {
				t.Helper()
				if _, err := app.Commands.RecordStep.Handle(ctx, threadsapp.RecordStepInput{ThreadID: th.ID, StepName: "pay",
					Status: status, IdempotencyKey: "k1", Context: map[string]string{"order": v}}); err != nil {
					t.Fatal(err)
				}
			}
			latest := func() string {
				t.Helper()
				st, err := store.ListStepStates(ctx, th.ID)
				if err != nil || len(st) != 1 {
					t.Fatalf("step states %+v %v", st, err)
				}
				return st[0].LatestContext["order"]
			}

			record("failed", "first") // a new state row
			if got := latest(); got != "first" {
				t.Fatalf("latest context %q, want the attempt's", got)
			}
			record("success", "second") // the same row updated
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
