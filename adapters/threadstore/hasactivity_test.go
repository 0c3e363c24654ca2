package threadstore_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app/authz"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
)

// HasActivity answers whether an attempt of (thread, step, key) exists,
// until the thread is deleted, from one probe of an index on all three
// columns (OTLP calls it once a span: a scan of the thread's attempts would
// make a trace's ingest quadratic).
func TestHasActivityProbesTheFullIdentity(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		st := threadstore.New(db)
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "admin", Role: domain.RoleAdmin})
		app := threadsapp.New(st, nil, nil, []byte("secret"), log).Application()
		start := func() string {
			th, err := app.Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: "t"})
			if err != nil {
				t.Fatal(err)
			}
			return th.ID
		}
		a, b := start(), start()
		for _, status := range []string{"failed", "success"} { // two attempts of one identity
			if _, err := app.Commands.RecordStep.Handle(ctx, threadsapp.RecordStepInput{ThreadID: a, StepName: "s",
				Status: status, IdempotencyKey: "k", Context: map[string]string{"x": "y"}}); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			thread, step, key string
			want              bool
		}{{a, "s", "k", true}, {a, "s", "k2", false}, {a, "s2", "k", false}, {b, "s", "k", false}} {
			got, err := st.HasActivity(ctx, c.thread, c.step, c.key)
			if err != nil || got != c.want {
				t.Errorf("HasActivity(%s, %s, %s) = %v, %v; want %v", c.thread, c.step, c.key, got, err, c.want)
			}
		}
		if _, err := st.DeleteThreads(ctx, []string{a}); err != nil {
			t.Fatal(err)
		}
		if got, err := st.HasActivity(ctx, a, "s", "k"); err != nil || got {
			t.Errorf("HasActivity of a deleted thread = %v, %v", got, err)
		}

		// The plan: one index probe on (thread_id, step_name,
		// idempotency_key), not a scan of the thread's attempts.
		// On PostgreSQL with enable_seqscan off: with a few rows it scans
		// whatever the indexes.
		plan := sqldbtest.Explain(t, db, threadstore.HasActivityQuery, []any{a, "s", "k"}, "enable_seqscan = off")
		probed := false
		for _, l := range plan {
			if d == sqldb.SQLite {
				probed = probed || strings.Contains(l, "SEARCH") && strings.Contains(l, "idempotency_key=?")
			} else {
				probed = probed || strings.Contains(l, "Index Cond") && strings.Contains(l, "idempotency_key")
			}
		}
		if !probed {
			t.Errorf("HasActivity's plan does not probe the full identity:\n%s", strings.Join(plan, "\n"))
		}
	})
}
