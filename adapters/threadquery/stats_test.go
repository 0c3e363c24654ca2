package threadquery_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
)

type fixedClock struct{ t time.Time }

func (c *fixedClock) Now() time.Time { return c.t }

// The overview aggregates count per UTC hour and per step on both stores.
func TestStats(t *testing.T) {
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			db := sqldbtest.Open(t, d)
			now := time.Now().UTC().Truncate(time.Hour).Add(30 * time.Minute)
			clock := &fixedClock{now.Add(-2 * time.Hour)}
			th := threads.New(threadstore.New(db), nil, clock, []byte("test-hash-chain-secret-0123456789abcdef"), slog.New(slog.NewTextHandler(io.Discard, nil)))
			ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleAdmin})
			mk := func(steps ...string) string {
				r, err := th.Application().Commands.StartThread.Handle(ctx, threads.StartThreadInput{})
				if err != nil {
					t.Fatal(err)
				}
				for i, st := range steps {
					if _, err := th.Application().Commands.RecordStep.Handle(ctx, threads.RecordStepInput{ThreadID: r.ID, StepName: "s" + string(rune('a'+i)), Status: st,
						IdempotencyKey: "k", Context: map[string]string{}}); err != nil {
						t.Fatal(err)
					}
				}
				return r.ID
			}
			a := mk("success", "failed") // two hours ago: started
			clock.t = now
			mk("success")
			if _, err := th.Application().Commands.EndThread.Handle(ctx, threads.EndThreadInput{ThreadID: a, Status: "completed"}); err != nil {
				t.Fatal(err)
			}
			s := threadquery.New(db)
			hours, err := s.Hourly(ctx, now.Add(-3*time.Hour).Truncate(time.Hour), now)
			if err != nil {
				t.Fatal(err)
			}
			if len(hours) != 4 {
				t.Fatalf("%d buckets: %+v", len(hours), hours)
			}
			if h := hours[1]; h.Started != 1 || h.Completed != 0 {
				t.Fatalf("two hours ago: %+v", h)
			}
			if h := hours[3]; h.Started != 1 || h.Completed != 1 || h.Failed != 0 {
				t.Fatalf("this hour: %+v", h)
			}
			steps, err := s.StepsSince(ctx, now.Add(-3*time.Hour), 10)
			if err != nil || len(steps) != 2 || steps[0].StepName != "sb" || steps[0].Failed != 1 || steps[1].Attempts != 2 {
				t.Fatalf("steps %+v %v", steps, err)
			}
			if cs, err := s.ContractStats(ctx); err != nil || len(cs) != 0 {
				t.Fatalf("contract stats %+v %v", cs, err)
			}
		})
	}
}
