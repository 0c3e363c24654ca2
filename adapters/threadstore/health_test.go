package threadstore_test

import (
	"context"
	"testing"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadstore"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
)

// Health is written with every attempt, in its transaction, and a backfill
// of rows from before the health columns recomputes the same values.
func TestHealthKeptOnWriteAndBackfilled(t *testing.T) {
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			threads, db, ctx := setup(t, d)
			store := threadstore.New(db)
			th, err := threads.Application().Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: "h"})
			if err != nil {
				t.Fatal(err)
			}
			record := func(name, key, status string, meta map[string]any) {
				t.Helper()
				if _, err := threads.Application().Commands.RecordStep.Handle(ctx, threadsapp.RecordStepInput{ThreadID: th.ID, StepName: name, Status: status,
					IdempotencyKey: key, Context: map[string]string{}, Metadata: meta}); err != nil {
					t.Fatal(err)
				}
			}
			record("a", "1", "success", nil)
			record("pay", "1", "failed", map[string]any{"error": "card declined"})
			record("ship", "1", "error", nil)
			record("ship", "1", "success", nil) // the retry recovers ship
			got, err := store.GetThread(ctx, th.ID)
			if err != nil {
				t.Fatal(err)
			}
			h := got.Health()
			if h.FailedSteps != 1 || h.FirstIssue == nil || h.FirstIssue.StepName != "pay" ||
				h.FirstIssue.Type != domain.IssueStepFailed || h.FirstIssue.Message != "card declined" || h.LastActivityAt.IsZero() {
				t.Fatalf("health on write = %+v %+v", h, h.FirstIssue)
			}
			var health string
			var dur int64
			if err := db.QueryRow(db.Rebind(`SELECT health, duration_ms FROM threads WHERE id = ?`), th.ID).Scan(&health, &dur); err != nil {
				t.Fatal(err)
			}
			if health != "FAILED" || dur < 0 {
				t.Fatalf("health column %q, duration %d", health, dur)
			}
			if _, err := threads.Application().Commands.EndThread.Handle(ctx, threadsapp.EndThreadInput{ThreadID: th.ID, Status: "cancelled", Reason: "operator"}); err != nil {
				t.Fatal(err)
			}
			ended, _ := store.GetThread(ctx, th.ID)
			if ended.Health().FailedSteps != 1 || ended.Health().FirstIssue == nil {
				t.Fatalf("ending the thread lost its health: %+v", ended.Health())
			}

			// A row from before the migration: health columns at their defaults.
			if _, err := db.Exec(db.Rebind(`UPDATE threads SET health = 'OK', failed_steps = 0, first_issue_step = NULL,
 first_issue_type = NULL, first_issue_message = NULL, first_issue_severity = NULL, last_activity_at = NULL,
 duration_ms = 0, health_version = 0 WHERE id = ?`), th.ID); err != nil {
				t.Fatal(err)
			}
			n, err := store.BackfillHealth(ctx)
			if err != nil || n != 1 {
				t.Fatalf("backfill %d %v", n, err)
			}
			back, _ := store.GetThread(ctx, th.ID)
			if back.Health().FailedSteps != 1 || back.Health().FirstIssue == nil || *back.Health().FirstIssue != *h.FirstIssue ||
				!back.Health().LastActivityAt.Equal(h.LastActivityAt) {
				t.Fatalf("backfilled %+v, want %+v", back.Health(), h)
			}
			if err := db.QueryRow(db.Rebind(`SELECT health, duration_ms FROM threads WHERE id = ?`), th.ID).Scan(&health, &dur); err != nil {
				t.Fatal(err)
			}
			if health != "FAILED" || dur <= 0 && !back.CompletedAt.After(back.CreatedAt) {
				t.Fatalf("backfilled health %q duration %d", health, dur)
			}
			if n, err := store.BackfillHealth(ctx); err != nil || n != 0 {
				t.Fatalf("second backfill %d %v", n, err)
			}
		})
	}
}

// A thread deleted between the backfill's listing and its turn (retention
// sweeps old threads while an upgraded engine backfills them) is skipped,
// not an error that stops the backfill.
func TestBackfillSkipsAThreadDeletedMeanwhile(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		s := threadstore.New(sqldbtest.Open(t, d))
		if err := threadstore.BackfillOne(s, context.Background(), "deleted-meanwhile"); err != nil {
			t.Fatalf("backfill of a vanished thread: %v", err)
		}
	})
}
