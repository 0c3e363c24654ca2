package threadstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/contractstore"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app/authz"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/domain/gherkin"
	"github.com/threadengine/engine/ports"
)

const judgeSrc = `Feature: judged
Rule: Approve
  When step "approval" is submitted
  Then owner must be "ops"
  And this step is an entry point
  And content "reference" must not be empty

Rule: Charge
  When step "charge" is submitted
  Then owner must be "ops"
  And step "approval" must succeed before each invocation
  And content "amount" must be a number greater than 0
  And content "currency" must be one of "GBP", "USD", "EUR"
  And content "reference" must equal approval.reference

Rule: Close
  When step "close" is submitted
  Then owner must be "ops"
  And step "charge" must have succeeded
  And this step is terminal
`

func judgeSetup(t *testing.T, d sqldb.Dialect) (*threadsapp.Module, *threadstore.Store, context.Context, string) {
	t.Helper()
	res, err := gherkin.Compile([]byte(judgeSrc), nil)
	if err != nil || len(res.Problems) > 0 {
		t.Fatal(err, res.Problems)
	}
	res.Contract.Version = 1
	db := sqldbtest.Open(t, d)
	store := threadstore.New(db)
	t.Cleanup(func() { _ = store.Close() })
	contracts := contractstore.New(db)
	ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleMember})
	if err := contracts.PutContractVersion(ctx, res.Contract, []byte(judgeSrc), "u1", time.Now()); err != nil {
		t.Fatal(err)
	}
	threads := threadsapp.New(store, contracts, nil, []byte("secret"), nil)
	th, err := threads.Application().Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Contract: "judged", Role: "ops", Label: "j"})
	if err != nil {
		t.Fatal(err)
	}
	return threads, store, ctx, th.ID
}

// A step breaking a content rule is refused and not recorded; the refusal
// is in the log (who, what, when) and retention deletes it; a cross-step
// reference reads the latest success of the referenced step.
func TestContentRefusalsAreLoggedNotRecorded(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		threads, store, ctx, tid := judgeSetup(t, d)
		rec := threads.Application().Commands.RecordStep
		step := func(name, key string, c map[string]string) (threadsapp.StepResult, error) {
			return rec.Handle(ctx, threadsapp.RecordStepInput{ThreadID: tid, StepName: name, Status: "success", IdempotencyKey: key, Context: c})
		}
		if _, err := step("approval", "a0", map[string]string{"reference": " "}); domain.CodeOf(err) != domain.CodeContentRuleFailed {
			t.Fatalf("empty reference: %v", err)
		}
		if _, err := step("approval", "a1", map[string]string{"reference": "R-1"}); err != nil {
			t.Fatal(err)
		}
		for _, bad := range []map[string]string{
			{"amount": "0", "currency": "GBP", "reference": "R-1"},
			{"amount": "5", "currency": "JPY", "reference": "R-1"},
			{"amount": "5", "currency": "GBP", "reference": "R-2"},
		} {
			if _, err := step("charge", "c-bad", bad); domain.CodeOf(err) != domain.CodeContentRuleFailed {
				t.Fatalf("%v: %v", bad, err)
			}
		}
		if _, err := step("charge", "c1", map[string]string{"amount": "5", "currency": "GBP", "reference": "R-1"}); err != nil {
			t.Fatalf("valid charge: %v", err)
		}
		states, err := store.ListStepStates(ctx, tid)
		if err != nil || len(states) != 2 {
			t.Fatalf("recorded states %+v (%v), want approval and charge only", states, err)
		}
		th, err := store.GetThread(ctx, tid)
		if err != nil || th.Status != domain.ThreadActive || th.StepCount() != 2 {
			t.Fatalf("thread %+v (%v)", th, err)
		}
		refusals, err := store.ListRefusals(ctx, ports.RefusalFilter{ThreadID: tid, Limit: 10})
		if err != nil || len(refusals) != 4 {
			t.Fatalf("refusals %+v (%v), want 4", refusals, err)
		}
		newest := refusals[0]
		if newest.StepName != "charge" || newest.Field != "reference" || newest.Rule != "equals" || newest.PrincipalID != "u1" ||
			newest.Role != "" || newest.Code != "content_rule_failed" || newest.ContractName != "judged" || newest.Context["reference"] != "R-2" {
			t.Fatalf("newest refusal %+v", newest)
		}
		if page, _ := store.ListRefusals(ctx, ports.RefusalFilter{Contract: "judged", Before: refusals[1].CreatedAt, BeforeID: refusals[1].ID, Limit: 10}); len(page) != 2 {
			t.Fatalf("page before the second: %d rows", len(page))
		}
		n, err := store.PruneRefusals(ctx, time.Now().Add(-time.Hour), 3)
		if err != nil || n != 1 {
			t.Fatalf("pruned %d (%v), want the oldest beyond 3", n, err)
		}
		if left, _ := store.ListRefusals(ctx, ports.RefusalFilter{ThreadID: tid, Limit: 10}); len(left) != 3 || left[0].ID != newest.ID {
			t.Fatalf("after the row bound: %+v", left)
		}
		n, err = store.PruneRefusals(ctx, time.Now().Add(time.Hour), 1000)
		if err != nil || n != 3 {
			t.Fatalf("pruned %d (%v), want every expired one", n, err)
		}
	})
}

// One fresh approval allows one charge whatever the number of concurrent
// waiters; a report of the granted charge consumes nothing more; an
// unguarded report consumes the next approval, and another unguarded
// report on it breaks the clause.
func TestFreshApprovalsConsumedUnderTheLock(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		threads, store, ctx, tid := judgeSetup(t, d)
		ct, _ := gherkin.Compile([]byte(judgeSrc), nil)
		contract := ct.Contract
		rec := threads.Application().Commands.RecordStep
		if _, err := rec.Handle(ctx, threadsapp.RecordStepInput{ThreadID: tid, StepName: "approval", Status: "success",
			IdempotencyKey: "a1", Context: map[string]string{"reference": "R-1"}}); err != nil {
			t.Fatal(err)
		}
		// Concurrent permission decisions, each under the thread lock.
		var wg sync.WaitGroup
		granted := make(chan string, 8)
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				inv := fmt.Sprint("inv-", i)
				err := store.UpdateGrants(ctx, tid, func(v ports.GrantTx) (*domain.StepGrant, error) {
					th := v.Thread
					p := th.PermitStep(domain.Actor{PrincipalKind: "user", PrincipalID: "u1"}, &contract, "charge", inv,
						ports.Recorded(v.States), v.Grants, time.Now())
					if !p.Allowed || !p.New {
						return nil, nil
					}
					granted <- inv
					return &p.Grant, nil
				})
				if err != nil {
					t.Error(err)
				}
			}(i)
		}
		wg.Wait()
		close(granted)
		var invs []string
		for g := range granted {
			invs = append(invs, g)
		}
		if len(invs) != 1 {
			t.Fatalf("grants on one approval: %v, want exactly one", invs)
		}
		gv, err := store.ReadGrants(ctx, tid)
		if err != nil || len(gv.Grants) != 1 || len(gv.Grants[0].FreshConsumed) != 1 {
			t.Fatalf("stored grants %+v (%v)", gv.Grants, err)
		}
		ok := map[string]string{"amount": "5", "currency": "GBP", "reference": "R-1"}
		res, err := rec.Handle(ctx, threadsapp.RecordStepInput{ThreadID: tid, StepName: "charge", Status: "success",
			IdempotencyKey: "c1", InvocationID: invs[0], Context: ok})
		if err != nil || res.Validation.HasCritical {
			t.Fatalf("granted charge: %v %+v", err, res.Validation)
		}
		if _, err := rec.Handle(ctx, threadsapp.RecordStepInput{ThreadID: tid, StepName: "approval", Status: "success",
			IdempotencyKey: "a2", Context: map[string]string{"reference": "R-1"}}); err != nil {
			t.Fatal(err)
		}
		res, err = rec.Handle(ctx, threadsapp.RecordStepInput{ThreadID: tid, StepName: "charge", Status: "success",
			IdempotencyKey: "c2", Context: ok})
		if err != nil || res.Validation.HasCritical {
			t.Fatalf("unguarded charge on a new approval: %v %+v", err, res.Validation)
		}
		gv, _ = store.ReadGrants(ctx, tid)
		if len(gv.Grants) != 2 || gv.Grants[1].InvocationID != domain.ReportInvocationPrefix+res.StepID {
			t.Fatalf("grants after the unguarded report %+v", gv.Grants)
		}
		res, err = rec.Handle(ctx, threadsapp.RecordStepInput{ThreadID: tid, StepName: "charge", Status: "success",
			IdempotencyKey: "c3", Context: ok})
		if err != nil || !res.Validation.HasCritical || res.Validation.Issues[len(res.Validation.Issues)-1].Type != domain.IssueFreshDependencyRequired {
			t.Fatalf("second unguarded charge on one approval: %v %+v", err, res.Validation)
		}
	})
}
