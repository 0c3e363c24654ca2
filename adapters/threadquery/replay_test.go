package threadquery_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/contractstore"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/contracts"
	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
	"github.com/threadengine/engine/ports/portstest"
)

// replayPay is a YAML contract (its Gherkin twin is in app/contracts'
// replay tests): approval by a reviewer, then a charge by a processor.
const replayPay = `contract_name: pay
version: %d
entry_points: [approval]
steps: [{id: approval, owner: reviewer}, {id: charge, owner: processor}]
transitions: [{from: approval, to: charge}]
terminal_steps: [charge]
`

// ContractThreads pages a contract's threads newest first over all its
// versions, with their attempts in record order (at most maxSteps) and the
// roles each writer holds.
func TestContractThreads(t *testing.T) {
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			db := sqldbtest.Open(t, d)
			clock := portstest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			cs := contractstore.New(db)
			app := contracts.New(contracts.Deps{Store: cs, Clock: clock})
			admin := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleAdmin})
			for v := 1; v <= 2; v++ {
				if _, err := app.Commands.Publish.Handle(admin, contracts.Publish{Source: []byte(fmt.Sprintf(replayPay, v))}); err != nil {
					t.Fatal(err)
				}
			}
			th := threads.New(threadstore.New(db), cs, clock, []byte("test-hash-chain-secret-0123456789abcdef"), slog.New(slog.NewTextHandler(io.Discard, nil)))
			cmd := th.Application().Commands
			step := func(id, role, name, amount string) {
				t.Helper()
				clock.Advance(time.Second)
				if _, err := cmd.RecordStep.Handle(admin, threads.RecordStepInput{ThreadID: id, Role: role, StepName: name, Status: "success",
					IdempotencyKey: name, Context: map[string]string{"amount": amount}}); err != nil {
					t.Fatal(err)
				}
			}
			var ids []string // oldest first
			for i := 0; i < 7; i++ {
				clock.Advance(time.Minute)
				r, err := cmd.StartThread.Handle(admin, threads.StartThreadInput{Contract: fmt.Sprintf("pay:%d", 1+i%2), Role: "reviewer"})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, r.ID)
				step(r.ID, "reviewer", "approval", "")
				if i == 6 {
					continue // the newest stays at its approval
				}
				if _, err := cmd.JoinThread.Handle(admin, threads.JoinInput{ThreadID: r.ID, Role: "processor"}); err != nil {
					t.Fatal(err)
				}
				step(r.ID, "processor", "charge", fmt.Sprint(i))
			}
			if _, err := cmd.StartThread.Handle(admin, threads.StartThreadInput{Role: "x"}); err != nil { // no contract
				t.Fatal(err)
			}

			s := threadquery.New(db)
			ctx := context.Background()
			var got []ports.ReplayThread
			var after *ports.ReplayCursor
			for {
				page, rows, err := s.ContractThreads(ctx, "pay", after, 3, 10)
				if err != nil {
					t.Fatal(err)
				}
				want := 1 + len(page)
				for _, p := range page {
					want += len(p.Steps) + 1 // the parties: reviewer, and processor once joined
					if len(p.Steps) == 2 {
						want++
					}
				}
				if rows != want {
					t.Fatalf("rows %d, want %d", rows, want)
				}
				got = append(got, page...)
				if len(page) < 3 {
					break
				}
				last := page[len(page)-1]
				after = &ports.ReplayCursor{CreatedAt: last.CreatedAt, ID: last.ID}
			}
			if len(got) != 7 {
				t.Fatalf("%d threads, want 7", len(got))
			}
			for i, g := range got {
				want := ids[len(ids)-1-i]
				if g.ID != want || g.ContractVersion != 1+(len(ids)-1-i)%2 {
					t.Fatalf("thread %d: %s v%d, want %s", i, g.ID, g.ContractVersion, want)
				}
			}
			newest, oldest := got[0], got[6]
			if newest.Status != "active" || len(newest.Steps) != 1 || newest.StepCount != 1 {
				t.Fatalf("newest %+v", newest)
			}
			if oldest.Status != "completed" || oldest.Health != domain.HealthOK || oldest.StepCount != 2 {
				t.Fatalf("oldest %+v", oldest)
			}
			a, c := oldest.Steps[0], oldest.Steps[1]
			if a.Name != "approval" || c.Name != "charge" || c.IdempotencyKey != "charge" || c.Status != "success" ||
				!reflect.DeepEqual(c.Context, map[string]string{"amount": "0"}) || !c.RecordedAt.After(a.RecordedAt) || c.ID == "" {
				t.Fatalf("steps %+v", oldest.Steps)
			}
			if !reflect.DeepEqual(a.Roles, []string{"reviewer", "processor"}) {
				t.Fatalf("roles %v", a.Roles)
			}
			// At most maxSteps attempts per thread; StepCount says how many there are.
			page, _, err := s.ContractThreads(ctx, "pay", &ports.ReplayCursor{CreatedAt: got[5].CreatedAt, ID: got[5].ID}, 5, 1)
			if err != nil || len(page) != 1 || page[0].ID != oldest.ID || len(page[0].Steps) != 1 || page[0].StepCount != 2 {
				t.Fatalf("maxSteps 1: %+v %v", page, err)
			}
			if page, _, err := s.ContractThreads(ctx, "nope", nil, 5, 5); err != nil || len(page) != 0 {
				t.Fatalf("unknown contract: %+v %v", page, err)
			}
		})
	}
}
