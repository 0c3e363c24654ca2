package threadstore_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadstore"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Grant decisions serialise on the thread row: of many concurrent callers
// each granting only while no grant consumed the same success, exactly one
// stores its grant. A status change replaces the grant; a release deletes an
// allowed one only; an append sees the status of its invocation's grant.
func TestGrantsUnderTheThreadLock(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		threads, db, ctx := setup(t, d)
		store := threadstore.New(db)
		th, err := threads.Application().Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: "g"})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				err := store.UpdateGrants(ctx, th.ID, func(v ports.GrantTx) (*domain.StepGrant, error) {
					if v.Thread.ID != th.ID || len(v.Thread.Parties) == 0 {
						return nil, fmt.Errorf("thread not loaded: %+v", v.Thread)
					}
					for _, g := range v.Grants {
						if g.Consumed == "step-1" {
							return nil, nil
						}
					}
					time.Sleep(5 * time.Millisecond) // widen the race a lock must close
					return &domain.StepGrant{InvocationID: fmt.Sprint("inv-", i), StepName: "pay", PrincipalID: "u1",
						Status: domain.GrantAllowed, Consumed: "step-1", GrantedAt: time.Now()}, nil
				})
				if err != nil {
					t.Error(err)
				}
			}(i)
		}
		wg.Wait()
		var grants []domain.StepGrant
		read := func() {
			t.Helper()
			if err := store.UpdateGrants(ctx, th.ID, func(v ports.GrantTx) (*domain.StepGrant, error) {
				grants = v.Grants
				return nil, nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		read()
		if len(grants) != 1 || grants[0].Consumed != "step-1" || grants[0].Status != domain.GrantAllowed {
			t.Fatalf("grants after the race: %+v, want exactly one", grants)
		}
		inv := grants[0].InvocationID

		// Cancel: the row is replaced, what it consumed is kept; release
		// leaves a cancelled grant alone.
		cancelled := grants[0]
		cancelled.Status = domain.GrantCancelled
		if err := store.UpdateGrants(ctx, th.ID, func(ports.GrantTx) (*domain.StepGrant, error) { return &cancelled, nil }); err != nil {
			t.Fatal(err)
		}
		if err := store.ReleaseGrant(ctx, th.ID, inv, cancelled.Answer); err != nil {
			t.Fatal(err)
		}
		read()
		if len(grants) != 1 || grants[0].Status != domain.GrantCancelled || grants[0].Consumed != "step-1" {
			t.Fatalf("after cancel and release: %+v", grants)
		}
		// A report carrying the cancelled invocation is refused.
		_, err = threads.Application().Commands.RecordStep.Handle(ctx, threadsapp.RecordStepInput{ThreadID: th.ID, StepName: "pay", Status: "success",
			IdempotencyKey: inv, InvocationID: inv, Context: map[string]string{}})
		if domain.CodeOf(err) != domain.CodeInvocationCancelled {
			t.Fatalf("report under a cancelled grant: %v", err)
		}
		// A released allowed grant is gone, but only while the answer
		// that releases it holds it: a later answer (the same invocation
		// asked again) took it over.
		other := domain.StepGrant{InvocationID: "inv-x", StepName: "pay", PrincipalID: "u1", Status: domain.GrantAllowed,
			GrantedAt: time.Now(), Answer: "a1"}
		taken := other
		taken.Answer = "a2"
		for _, g := range []*domain.StepGrant{&other, &taken} {
			if err := store.UpdateGrants(ctx, th.ID, func(ports.GrantTx) (*domain.StepGrant, error) { return g, nil }); err != nil {
				t.Fatal(err)
			}
		}
		if err := store.ReleaseGrant(ctx, th.ID, "inv-x", "a1"); err != nil {
			t.Fatal(err)
		}
		read()
		if len(grants) != 2 || grants[1].Answer != "a2" {
			t.Fatalf("the first answer gave back a grant a later one holds: %+v", grants)
		}
		if err := store.ReleaseGrant(ctx, th.ID, "inv-x", "a2"); err != nil {
			t.Fatal(err)
		}
		read()
		if len(grants) != 1 {
			t.Fatalf("after releasing inv-x: %+v", grants)
		}
		// Erasing the thread erases its grants.
		if _, err := store.DeleteThreads(ctx, []string{th.ID}); err != nil {
			t.Fatal(err)
		}
	})
}
