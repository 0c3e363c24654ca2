package threadquery_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/threadengine/engine/adapters/graphqlapi/graphqltest"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

func TestReadSide(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		th := threads.New(threadstore.New(db), nil, nil, []byte("test-hash-chain-secret-0123456789abcdef"), slog.New(slog.NewTextHandler(io.Discard, nil)))
		ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleAdmin})
		a, err := graphqltest.SeedThread(ctx, th, "a", 2)
		if err != nil {
			t.Fatal(err)
		}
		b, err := graphqltest.SeedThread(ctx, th, "b_%", 1)
		if err != nil {
			t.Fatal(err)
		}
		// A cycle: a → b → a.
		if err := graphqltest.Link(ctx, th, a.ID, b.ID); err != nil {
			t.Fatal(err)
		}
		if err := graphqltest.Link(ctx, th, b.ID, a.ID); err != nil {
			t.Fatal(err)
		}
		s := threadquery.New(db)
		chains, err := s.Chains(ctx, []string{a.ID, b.ID, "missing"}, 10, 50)
		if err != nil {
			t.Fatal(err)
		}
		if got := chains[a.ID]; len(got) != 2 || got[0].ThreadID != a.ID || got[0].Depth != 1 || got[1].ThreadID != b.ID || got[1].Depth != 2 {
			t.Fatalf("chain of a: %+v", got)
		}
		if got := chains[b.ID]; len(got) != 2 || got[0].ThreadID != b.ID {
			t.Fatalf("chain of b: %+v", got)
		}
		if len(chains["missing"]) != 0 {
			t.Fatalf("missing root: %+v", chains["missing"])
		}
		// LIKE wildcards in a ref value are literal.
		f := ports.ThreadFilter{RefValue: "_%", Limit: 10}
		page, err := s.ListThreads(ctx, f)
		total, _ := s.CountThreads(ctx, f, 100)
		if err != nil || total != 1 || len(page) != 1 || page[0].ID != b.ID {
			t.Fatalf("wildcards: %d %+v %v", total, page, err)
		}
		// Refs come with the row.
		ts, err := s.GetThreads(ctx, []string{a.ID})
		if err != nil || len(ts) != 1 || ts[0].Refs["orderId"] != "O-a" || ts[0].Refs["linkedThread:"+b.ID] != b.ID {
			t.Fatalf("refs: %+v %v", ts, err)
		}
		// "name:key" in stepName selects one step identity.
		steps, err := s.Steps(ctx, []string{a.ID}, ports.StepFilter{StepName: "step-1:k1"}, 100)
		if err != nil || len(steps[a.ID]) != 1 || steps[a.ID][0].StepName != "step-1" {
			t.Fatalf("name:key: %+v %v", steps, err)
		}
		// Per-step paging of history: newest first, offset applies per step.
		keys := []ports.StepKey{{ThreadID: a.ID, StepName: "step-0", IdempotencyKey: "k0"}, {ThreadID: a.ID, StepName: "step-1", IdempotencyKey: "k1"}}
		h, err := s.StepHistories(ctx, keys, ports.HistoryFilter{Limit: 1, Offset: 1})
		if err != nil || len(h[keys[0]]) != 1 || h[keys[0]][0].Status != "failed" || len(h[keys[1]]) != 0 {
			t.Fatalf("history paging: %+v %v", h, err)
		}
	})
}
