package threads

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/uuid"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/waits"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports/portstest"
)

const orderYAML = `contract_name: order
version: 1
entry_points: [pay]
parties: [checkout, warehouse]
steps:
  - id: pay
    owner: checkout
  - id: ship
    owner: warehouse
transitions:
  - from: pay
    to: ship
terminal_steps: [ship]
`

type threadsFixture struct {
	threads *Module
	store   *fakeThreads
	clock   *portstest.Clock
}

func newThreadsFixture(t *testing.T) threadsFixture {
	t.Helper()
	c, err := domain.ParseContract([]byte(orderYAML))
	if err != nil {
		t.Fatal(err)
	}
	store := newFakeThreads()
	clock := portstest.NewClock(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	return threadsFixture{threads: New(store, portstest.Contracts{"order": c}, clock, []byte("secret"), nil), store: store, clock: clock}
}

func as(id string, role domain.Role) context.Context {
	return authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: id, Role: role})
}

func stepIn(threadID, role, name, status string) RecordStepInput {
	return RecordStepInput{ThreadID: threadID, Role: role, StepName: name, Status: status, IdempotencyKey: name,
		Context: map[string]string{}}
}

// One key, two services: the warehouse connection joins as warehouse and its
// terminal step is judged as warehouse's, completing the thread.
func TestOneKeyTwoParties(t *testing.T) {
	t.Parallel()
	f := newThreadsFixture(t)
	key := as("k1", domain.RoleMember)
	th, err := f.threads.Application().Commands.StartThread.Handle(key, StartThreadInput{Contract: "order:v1", Role: "checkout"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.threads.Application().Commands.RecordStep.Handle(key, stepIn(th.ID, "checkout", "pay", "success")); err != nil {
		t.Fatal(err)
	}
	j, err := f.threads.Application().Commands.JoinThread.Handle(key, JoinInput{ThreadID: th.ID, Role: "warehouse"})
	if err != nil || j.Role != "warehouse" || j.AccessLevel != domain.AccessParticipant {
		t.Fatalf("join as warehouse: %+v %v", j, err)
	}
	// The warehouse connection records ship as warehouse: the contract passes it.
	res, err := f.threads.Application().Commands.RecordStep.Handle(key, stepIn(th.ID, "warehouse", "ship", "success"))
	if err != nil || res.Role != "warehouse" || res.ThreadStatus != domain.ThreadCompleted || res.Validation.OverallStatus != domain.ValidationPassed {
		t.Fatalf("ship as warehouse: %+v %v", res, err)
	}
	// A connection of the same key that declared no role is ambiguous now.
	th2, _ := f.threads.Application().Commands.StartThread.Handle(key, StartThreadInput{Contract: "order", Role: "checkout"})
	if _, err := f.threads.Application().Commands.JoinThread.Handle(key, JoinInput{ThreadID: th2.ID, Role: "warehouse"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.threads.Application().Commands.RecordStep.Handle(key, stepIn(th2.ID, "", "pay", "success")); domain.CodeOf(err) != domain.CodeAmbiguousParty {
		t.Fatalf("no role, two parties: %v", err)
	}
}

func TestUnjoinedWritersAreNotParties(t *testing.T) {
	t.Parallel()
	f := newThreadsFixture(t)
	th, _ := f.threads.Application().Commands.StartThread.Handle(as("k1", domain.RoleMember), StartThreadInput{Contract: "order", Role: "checkout"})
	for name, ctx := range map[string]context.Context{"member": as("k2", domain.RoleMember), "admin": as("adm", domain.RoleAdmin)} {
		if _, err := f.threads.Application().Commands.RecordStep.Handle(ctx, stepIn(th.ID, "", "pay", "success")); domain.CodeOf(err) != domain.CodeNotAParty {
			t.Errorf("%s records a step: %v", name, err)
		}
		if err := f.threads.Application().Commands.AddRefs.Handle(ctx, AddRefsInput{ThreadID: th.ID, Refs: map[string]string{"a": "b"}}); domain.CodeOf(err) != domain.CodeNotAParty {
			t.Errorf("%s adds refs: %v", name, err)
		}
		if _, err := f.threads.Application().Commands.EndThread.Handle(ctx, EndThreadInput{ThreadID: th.ID}); domain.CodeOf(err) != domain.CodeNotAParty {
			t.Errorf("%s cancels: %v", name, err)
		}
		if _, err := f.threads.Application().Commands.InviteParty.Handle(ctx, InviteInput{ThreadID: th.ID, Role: "warehouse"}); domain.CodeOf(err) != domain.CodeNotAParty {
			t.Errorf("%s invites: %v", name, err)
		}
		if _, err := f.threads.Application().Commands.JoinThread.Handle(ctx, JoinInput{ThreadID: th.ID, Role: "warehouse"}); domain.CodeOf(err) != domain.CodeNotAParty {
			t.Errorf("%s joins by id: %v", name, err)
		}
	}
	if len(f.store.acts[th.ID]) != 0 || f.store.threads[th.ID].Status != domain.ThreadActive {
		t.Fatal("a refused write changed the thread")
	}
}

func TestInvitationsAndExpiry(t *testing.T) {
	t.Parallel()
	f := newThreadsFixture(t)
	owner := as("k1", domain.RoleMember)
	conn := &ConnParties{}
	th, _ := f.threads.Application().Commands.StartThread.Handle(owner, StartThreadInput{Contract: "order", Role: "checkout"})
	conn.Add(th.ID, "checkout")
	obs, err := f.threads.Application().Commands.InviteParty.Handle(owner, InviteInput{Conn: conn, Role: "warehouse", AccessLevel: "observer", ExpiresIn: "1h"})
	if err != nil || obs.ThreadID != th.ID {
		t.Fatalf("invite on the connection's only thread: %+v %v", obs, err)
	}
	guest := as("k2", domain.RoleMember)
	j, err := f.threads.Application().Commands.JoinThread.Handle(guest, JoinInput{Token: obs.Token})
	if err != nil || j.AccessLevel != domain.AccessObserver {
		t.Fatalf("join: %+v %v", j, err)
	}
	// By id the observer stays an observer.
	if j, err := f.threads.Application().Commands.JoinThread.Handle(guest, JoinInput{ThreadID: th.ID}); err != nil || j.AccessLevel != domain.AccessObserver {
		t.Fatalf("re-join by id: %+v %v", j, err)
	}
	if _, err := f.threads.Application().Commands.RecordStep.Handle(guest, stepIn(th.ID, "warehouse", "pay", "success")); domain.CodeOf(err) != domain.CodeInsufficientAccess {
		t.Fatalf("observer step: %v", err)
	}
	part, _ := f.threads.Application().Commands.InviteParty.Handle(owner, InviteInput{ThreadID: th.ID, Role: "warehouse", AccessLevel: "participant", ExpiresIn: "30m"})
	if j, err := f.threads.Application().Commands.JoinThread.Handle(guest, JoinInput{Token: part.Token}); err != nil || j.AccessLevel != domain.AccessParticipant {
		t.Fatalf("participant invitation: %+v %v", j, err)
	}
	if _, err := f.threads.Application().Commands.RecordStep.Handle(guest, stepIn(th.ID, "warehouse", "probe", "failed")); err != nil {
		t.Fatalf("participant step: %v", err)
	}
	f.clock.Advance(31 * time.Minute)
	if _, err := f.threads.Application().Commands.RecordStep.Handle(guest, stepIn(th.ID, "warehouse", "probe2", "failed")); domain.CodeOf(err) != domain.CodeGrantExpired {
		t.Fatalf("step after the grant expired: %v", err)
	}
	f.clock.Advance(time.Hour)
	if _, err := f.threads.Application().Commands.JoinThread.Handle(as("k3", domain.RoleMember), JoinInput{Token: obs.Token}); domain.CodeOf(err) != domain.CodeGrantExpired {
		t.Fatalf("join with an expired invitation: %v", err)
	}
	th2, _ := f.threads.Application().Commands.StartThread.Handle(owner, StartThreadInput{})
	conn.Add(th2.ID, "")
	if _, err := f.threads.Application().Commands.InviteParty.Handle(owner, InviteInput{Conn: conn, Role: "x"}); domain.CodeOf(err) != domain.CodeAmbiguousThread {
		t.Fatalf("invite on a connection with two threads: %v", err)
	}
}

func TestStepStatusesCancelReasonAndSubSteps(t *testing.T) {
	t.Parallel()
	f := newThreadsFixture(t)
	k := as("k1", domain.RoleMember)
	th, _ := f.threads.Application().Commands.StartThread.Handle(k, StartThreadInput{})
	for _, s := range []string{"success", "failed", "error", "skipped", "in_progress"} {
		if _, err := f.threads.Application().Commands.RecordStep.Handle(k, stepIn(th.ID, "", "s-"+s, s)); err != nil {
			t.Errorf("status %s: %v", s, err)
		}
	}
	if _, err := f.threads.Application().Commands.RecordStep.Handle(k, stepIn(th.ID, "", "b", "bogus")); domain.CodeOf(err) != domain.CodeInvalidStepStatus {
		t.Fatalf("bogus status: %v", err)
	}
	in := stepIn(th.ID, "", "subs", "success")
	for _, n := range []string{"e", "d", "c", "b", "a"} {
		in.SubSteps = append(in.SubSteps, SubStepInput{Name: n})
	}
	res, err := f.threads.Application().Commands.RecordStep.Handle(k, in)
	if err != nil {
		t.Fatal(err)
	}
	var names string
	for _, ss := range f.store.subs[res.StepID] {
		names += ss.Name
	}
	if names != "edcba" {
		t.Fatalf("sub-steps written as %q, want the order sent", names)
	}
	end, err := f.threads.Application().Commands.EndThread.Handle(k, EndThreadInput{ThreadID: th.ID, Reason: "x", ReasonObject: map[string]any{"by": "me"}})
	if err != nil || end.Status != domain.ThreadCancelled || end.EndReason != `{"by":"me","reason":"x"}` || end.Error != "" {
		t.Fatalf("cancel: %+v %v", end, err)
	}
}

// orderForWarehouse starts an order thread as checkout and joins it as
// warehouse, with the same key (one key, two services).
func orderForWarehouse(t *testing.T, f threadsFixture, key context.Context) string {
	t.Helper()
	th, err := f.threads.Application().Commands.StartThread.Handle(key, StartThreadInput{Contract: "order", Role: "checkout"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.threads.Application().Commands.JoinThread.Handle(key, JoinInput{ThreadID: th.ID, Role: "warehouse"}); err != nil {
		t.Fatal(err)
	}
	return th.ID
}

// paidOrder is a fixture with an order thread (orderForWarehouse) whose pay
// is recorded, so warehouse may ship now; key is the member key of both.
func paidOrder(t *testing.T) (threadsFixture, context.Context, string) {
	t.Helper()
	f := newThreadsFixture(t)
	key := as("k1", domain.RoleMember)
	th := orderForWarehouse(t, f, key)
	f.pay(t, key, th)
	return f, key, th
}

// pay records checkout's pay on thread th.
func (f threadsFixture) pay(t *testing.T, key context.Context, th string) {
	t.Helper()
	if _, err := f.threads.Application().Commands.RecordStep.Handle(key, stepIn(th, "checkout", "pay", "success")); err != nil {
		t.Fatal(err)
	}
}

// A wait that repeats an invocation already granted and is cancelled as it
// is answered gives back nothing: the grant was made (and answered) by the
// earlier wait, and releasing it would let a second invocation run on the
// same predecessor success.
func TestCancelledRepeatWaitKeepsTheEarlierGrant(t *testing.T) {
	t.Parallel()
	f, key, th := paidOrder(t)
	first, err := f.threads.Application().Commands.WaitForPermission.Handle(key, th, "warehouse", "ship", "inv-1", time.Second)
	if err != nil || first.Decision != waits.DecisionAllowed || !first.NewGrant {
		t.Fatalf("first wait: %+v %v", first, err)
	}
	cancelled, cancel := context.WithCancel(key)
	cancel()
	again, err := f.threads.Application().Commands.WaitForPermission.Handle(cancelled, th, "warehouse", "ship", "inv-1", time.Second)
	if err != nil || again.NewGrant {
		t.Fatalf("repeat wait: %+v %v", again, err)
	}
	if gs := f.store.grants[th]; len(gs) != 1 || gs[0].InvocationID != "inv-1" || gs[0].Status != domain.GrantAllowed {
		t.Fatalf("grants after the cancelled repeat: %+v, want inv-1 kept", gs)
	}
	f.wantConsumed(t, key, th)
}

// A reconnected SDK asks again with the same invocationId while the wait
// it lost is being given back (its answer reached no one): the repeat
// wait's answer takes the grant over, so that give-back leaves it, and
// the success stays consumed by it. Only the answer holding the grant
// gives it back.
func TestGiveBackLeavesAGrantARepeatWaitTookOver(t *testing.T) {
	t.Parallel()
	f, key, th := paidOrder(t)
	wait := func() waits.WaitResult {
		t.Helper()
		r, err := f.threads.Application().Commands.WaitForPermission.Handle(key, th, "warehouse", "ship", "inv-1", time.Second)
		if err != nil || r.Decision != waits.DecisionAllowed || r.Answer == "" {
			t.Fatalf("wait: %+v %v", r, err)
		}
		return r
	}
	lost, again := wait(), wait()
	if !lost.NewGrant || again.NewGrant || again.Answer == lost.Answer {
		t.Fatalf("first %+v, repeat %+v: want a new grant, then the same grant under a new answer", lost, again)
	}
	if err := f.threads.Application().Commands.ReleaseGrant.Handle(key, th, "inv-1", lost.Answer); err != nil {
		t.Fatal(err)
	}
	if gs := f.store.grants[th]; len(gs) != 1 || gs[0].Answer != again.Answer {
		t.Fatalf("grants after the lost answer's give-back: %+v, want inv-1 held by the repeat", gs)
	}
	f.wantConsumed(t, key, th)
	if err := f.threads.Application().Commands.ReleaseGrant.Handle(key, th, "inv-1", again.Answer); err != nil {
		t.Fatal(err)
	}
	if gs := f.store.grants[th]; len(gs) != 0 {
		t.Fatalf("grants after the holder's give-back: %+v, want none", gs)
	}
}

// A wait whose granting round waits on the thread's row lock past the
// deadline still answers timed_out before the client's deadline, and that
// round, once the lock is free, makes no grant (its waiter was told
// timed_out), so the predecessor success stays for the next waiter.
func TestWaitTimesOutWhileTheRowLockIsHeld(t *testing.T) {
	t.Parallel()
	// In a synctest bubble the deadline is the wait's own timer, not the
	// machine's speed: timed_out is answered before 300 ms of its clock.
	synctest.Test(t, func(t *testing.T) {
		f, key, th := paidOrder(t)
		lock := f.holdRowLock(t)
		start := time.Now()
		r, err := f.threads.Application().Commands.WaitForPermission.Handle(key, th, "warehouse", "ship", "inv-1", 300*time.Millisecond)
		took := time.Since(start)
		if err != nil || r.Decision != waits.DecisionTimedOut {
			t.Fatalf("wait behind a held row lock: %+v %v, want timed_out", r, err)
		}
		if took >= 300*time.Millisecond {
			t.Fatalf("timed_out after %v, not before the 300ms deadline", took)
		}
		lock() // the late round decides under the lock, and grants nothing
		eventuallyGrants(t, f, th, func(locks int, gs []domain.StepGrant) bool { return locks == 1 && len(gs) == 0 })
		next, err := f.threads.Application().Commands.WaitForPermission.Handle(key, th, "warehouse", "ship", "inv-2", time.Second)
		if err != nil || next.Decision != waits.DecisionAllowed {
			t.Fatalf("the next waiter on the same success: %+v %v, want allowed", next, err)
		}
	})
}

// The SDK waits again with the same invocationId after a timed_out while
// the first wait's round is still queued on the row lock: the second wait
// is answered allowed and its grant stays (the first round, answered
// already, grants nothing and gives nothing back), so the success is
// consumed once and a second invocation keeps waiting.
func TestRepeatWaitKeepsItsGrantWhenAnEarlierRoundFinishesLate(t *testing.T) {
	t.Parallel()
	// A synctest bubble orders it: synctest.Wait returns once every other
	// goroutine is blocked (queued on the lock, or done).
	synctest.Test(t, func(t *testing.T) {
		f, key, th := paidOrder(t)
		lock := f.holdRowLock(t)
		first, err := f.threads.Application().Commands.WaitForPermission.Handle(key, th, "warehouse", "ship", "inv-1", 200*time.Millisecond)
		if err != nil || first.Decision != waits.DecisionTimedOut {
			t.Fatalf("first wait: %+v %v", first, err)
		}
		second := make(chan waits.WaitResult, 1)
		go func() {
			r, err := f.threads.Application().Commands.WaitForPermission.Handle(key, th, "warehouse", "ship", "inv-1", 5*time.Second)
			if err != nil {
				t.Error(err)
			}
			second <- r
		}()
		synctest.Wait() // the second wait queues on the lock too
		lock()
		if r := <-second; r.Decision != waits.DecisionAllowed {
			t.Fatalf("repeat wait: %+v, want allowed", r)
		}
		synctest.Wait() // every round has ended: a late give-back, were there one, is made
		eventuallyGrants(t, f, th, func(_ int, gs []domain.StepGrant) bool {
			return len(gs) == 1 && gs[0].InvocationID == "inv-1" && gs[0].Status == domain.GrantAllowed
		})
		f.wantConsumed(t, key, th)
	})
}

// A party-scoped service account's keyed trace loses the creation race to
// another principal's thread for the same trace id: the account gets a
// thread of its own, and neither its application key nor anything else is
// bound to the thread it may not see.
func TestKeyedTraceRaceNeverBindsToAThreadTheCallerCannotSee(t *testing.T) {
	t.Parallel()
	f := newThreadsFixture(t)
	other := f.loseKeyedRace(t, KeyTrace, "t9") // u1's batch of trace t9 commits first
	th, _, err := f.threads.Application().Commands.StartThreadWithKey.HandleTrace(partyScoped("sa1"), "t9", "sa-order", StartThreadInput{Label: "sa's"})
	if err != nil {
		t.Fatal(err)
	}
	if th.ID == other.ID {
		t.Fatal("the party-scoped caller was handed a thread it may not see")
	}
	f.store.mu.Lock()
	bound := f.store.keys[KeyApp+"\x00sa-order"]
	f.store.mu.Unlock()
	if bound == other.ID {
		t.Fatal("the caller's key was bound to a thread it may not see")
	}
}

// The same race lost on the application key instead (another principal's
// thread took the key first) is refused as the key is without a race, and
// binds the trace to nothing.
func TestKeyedTraceRaceLostOnTheKeyIsRefused(t *testing.T) {
	t.Parallel()
	f := newThreadsFixture(t)
	f.loseKeyedRace(t, KeyApp, "shared")
	if _, _, err := f.threads.Application().Commands.StartThreadWithKey.HandleTrace(partyScoped("sa1"), "t10", "shared", StartThreadInput{}); err == nil || domain.KindOf(err) != domain.KindNotFound {
		t.Fatalf("a key naming a thread the caller may not see: %v, want not found", err)
	}
	f.store.mu.Lock()
	_, bound := f.store.keys[KeyTrace+"\x00t10"]
	f.store.mu.Unlock()
	if bound {
		t.Fatal("the trace was bound")
	}
}

// loseKeyedRace starts u1's own keyed thread and makes the next keyed
// create find (namespace, key) taken by it, as when another replica's
// create commits first; it returns u1's thread.
func (f threadsFixture) loseKeyedRace(t *testing.T, namespace, key string) domain.Thread {
	t.Helper()
	other, _, err := f.threads.Application().Commands.StartThreadWithKey.Handle(as("u1", domain.RoleMember), KeyApp, "u1-order", StartThreadInput{Label: "u1's"})
	if err != nil {
		t.Fatal(err)
	}
	f.store.mu.Lock()
	f.store.beforeKeyedCreate = func() {
		f.store.mu.Lock()
		f.store.keys[namespace+"\x00"+key] = other.ID
		f.store.mu.Unlock()
	}
	f.store.mu.Unlock()
	return other
}

// partyScoped is a party-scoped service account's context.
func partyScoped(id string) context.Context {
	return authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalServiceAccount, ID: id,
		Role: domain.RoleMember, Scope: domain.ScopeParty})
}

// wantConsumed checks that pay's success is used up: a second invocation of
// ship keeps waiting (times out).
func (f threadsFixture) wantConsumed(t *testing.T, key context.Context, th string) {
	t.Helper()
	other, err := f.threads.Application().Commands.WaitForPermission.Handle(key, th, "warehouse", "ship", "inv-2", 200*time.Millisecond)
	if err != nil || other.Decision != waits.DecisionTimedOut {
		t.Fatalf("a second invocation on the consumed success: %+v %v, want timed_out", other, err)
	}
}

// holdRowLock makes UpdateGrants wait, as behind a writer holding the
// thread's row lock; the returned func (also run at cleanup, and after 5 s
// so a wait that does not time out fails instead of hanging) frees it.
func (f threadsFixture) holdRowLock(t *testing.T) func() {
	t.Helper()
	lock := make(chan struct{})
	f.store.mu.Lock()
	f.store.rowLock = lock
	f.store.mu.Unlock()
	var once sync.Once
	free := func() {
		once.Do(func() {
			f.store.mu.Lock()
			f.store.rowLock = nil
			f.store.mu.Unlock()
			close(lock)
		})
	}
	time.AfterFunc(5*time.Second, free)
	t.Cleanup(free)
	return free
}

// eventuallyGrants waits (up to a minute, a hang bound) until ok holds for the thread's locked
// grant rounds and grants.
func eventuallyGrants(t *testing.T, f threadsFixture, th string, ok func(locks int, gs []domain.StepGrant) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		f.store.mu.Lock()
		locks, gs := f.store.grantLocks, append([]domain.StepGrant(nil), f.store.grants[th]...)
		f.store.mu.Unlock()
		if ok(locks, gs) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d locked rounds, grants %+v", locks, gs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A wait takes the thread's row lock only to answer allowed: its rounds
// that decide nothing (the predecessor not recorded yet) are plain reads.
func TestWaitLocksOnlyToGrant(t *testing.T) {
	t.Parallel()
	f := newThreadsFixture(t)
	key := as("k1", domain.RoleMember)
	th := orderForWarehouse(t, f, key)
	r, err := f.threads.Application().Commands.WaitForPermission.Handle(key, th, "warehouse", "ship", "inv-1", 100*time.Millisecond)
	if err != nil || r.Decision != waits.DecisionTimedOut {
		t.Fatalf("wait before pay: %+v %v", r, err)
	}
	if f.store.grantLocks != 0 || f.store.grantReads == 0 {
		t.Fatalf("a wait that decided nothing: %d locked rounds, %d reads", f.store.grantLocks, f.store.grantReads)
	}
	f.pay(t, key, th)
	r, err = f.threads.Application().Commands.WaitForPermission.Handle(key, th, "warehouse", "ship", "inv-1", time.Second)
	if err != nil || r.Decision != waits.DecisionAllowed || !r.NewGrant || f.store.grantLocks != 1 {
		t.Fatalf("granting wait: %+v %v, %d locked rounds", r, err, f.store.grantLocks)
	}
	if gs := f.store.grants[th]; len(gs) != 1 || gs[0].Consumed == "" {
		t.Fatalf("grants %+v", gs)
	}
}

// VerifyIntegrity of a thread written while it is verified: a step appended
// between its reads is no broken head, a tail stored without moving the
// thread's head is.
func TestVerifyIntegrityWhileWritten(t *testing.T) {
	t.Parallel()
	f := newThreadsFixture(t)
	k := as("k1", domain.RoleMember)
	cmds, q := f.threads.Application().Commands, f.threads.Application().Queries
	th, err := cmds.StartThread.Handle(k, StartThreadInput{})
	if err != nil {
		t.Fatal(err)
	}
	record := func(name string) {
		if _, err := cmds.RecordStep.Handle(k, stepIn(th.ID, "", name, "success")); err != nil {
			t.Fatal(err)
		}
	}
	record("a")
	record("b")
	f.store.afterList = func() { record("c") }
	if st, err := q.VerifyIntegrity.Handle(k, th.ID); err != nil || !st.Verified || st.TotalEvents != 3 {
		t.Fatalf("step appended while verifying: %+v %v", st, err)
	}
	f.store.mu.Lock()
	row := f.store.threads[th.ID]
	acts := f.store.acts[th.ID]
	row.RestoreHead(acts[1].Hash, 2) // c stored, the head not moved
	f.store.threads[th.ID] = row
	f.store.mu.Unlock()
	if st, err := q.VerifyIntegrity.Handle(k, th.ID); err != nil || st.Verified || st.Code != domain.ChainTruncated {
		t.Fatalf("tail without the head: %+v %v", st, err)
	}
}

// The rows a step writes have time-ordered ids (UUIDv7): successive steps'
// ids sort in the order they were recorded, so their rows sit together in
// the tables' id indexes (a retention batch deletes a thread's old steps
// from a few pages instead of one page each; performance.md).
func TestStepRowsHaveTimeOrderedIDs(t *testing.T) {
	t.Parallel()
	f := newThreadsFixture(t)
	k := as("k1", domain.RoleMember)
	th, err := f.threads.Application().Commands.StartThread.Handle(k, StartThreadInput{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 20 {
		in := stepIn(th.ID, "", fmt.Sprintf("s%d", i), "success")
		in.SubSteps = []SubStepInput{{Name: "a"}, {Name: "b"}}
		res, err := f.threads.Application().Commands.RecordStep.Handle(k, in)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.StepID)
		for _, ss := range f.store.subs[res.StepID] {
			ids = append(ids, ss.ID)
		}
	}
	for _, n := range f.store.notes {
		if u, err := uuid.Parse(n.ID); err != nil || u.Version() != 7 {
			t.Errorf("notification id %s: not a UUIDv7 (%v)", n.ID, err)
		}
	}
	for _, id := range ids {
		if u, err := uuid.Parse(id); err != nil || u.Version() != 7 {
			t.Errorf("id %s: not a UUIDv7 (%v)", id, err)
		}
	}
	// Each step's id, then its sub-steps' ids, as they were made: one
	// ascending sequence (the generator is monotonic within a process).
	if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Errorf("ids not in the order the steps were recorded: %v", ids)
	}
}
