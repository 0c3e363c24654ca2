package waits

// What the waits share (WaitForPermission, WaitForValidation, CancelGrant):
// the ports they wake and read by, decisions, the wait loop, verdicts.

import (
	"context"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/delivery"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Wait decisions, as the Python SDK 0.4.0 reads them.
const (
	DecisionAllowed     = "allowed"
	DecisionDenied      = "denied"
	DecisionPassed      = "passed"
	DecisionViolated    = "violated"
	DecisionUnvalidated = "unvalidated"
	DecisionTimedOut    = "timed_out"
	DecisionCancelled   = "cancelled"
)

// MaxWait bounds one wait (the SDK allows 0 < t ≤ 300 s).
const MaxWait = 300 * time.Second

// MaxInvocationIDLen bounds an invocation id, the client's name for one
// attempt and its grant. It is in characters: SDKs generate the id,
// typically a UUID.
const MaxInvocationIDLen = 128

// ThreadChanges hears of the changes the waits make themselves (a grant
// made, given back or cancelled): the other waits on the thread, on every
// replica, re-check (the Hub).
type ThreadChanges interface {
	ThreadsChanged(threadIDs ...string)
}

// ThreadFeed wakes a wait when its thread changes, on any replica (the
// Hub).
type ThreadFeed interface {
	ThreadChanges
	// WatchThread follows a thread's changes; Stop the watcher when done.
	WatchThread(threadID string) *delivery.ThreadWatcher
	// RoundSlot waits for a place among the rounds that read the database
	// at once (a burst of new waits queues instead of taking every
	// connection from the writers); release it after the round.
	RoundSlot(ctx context.Context) (release func(), err error)
}

// ThreadContracts finds the contract a thread was started with (nil for a
// free-form thread); the thread use cases' cache answers it.
type ThreadContracts interface {
	ThreadContract(ctx context.Context, threadID string) (*domain.Contract, error)
}

// now is the waits' clock: UTC, at the microsecond the stores keep.
func now(c ports.Clock) time.Time { return c.Now().UTC().Truncate(time.Microsecond) }

// WaitResult is the answer to a wait.
type WaitResult struct {
	Decision   string
	Code       domain.Code // on some denials (invocation_cancelled, thread_closed, not_a_party)
	Message    string
	Violations []domain.ValidationIssue
	// NewGrant: this wait made the grant (an earlier wait of the same
	// invocation did not). Only such a grant may be given back unused when
	// the answer reaches no one; an earlier one was already answered.
	NewGrant bool
	// Answer names this allowed answer (domain.StepGrant.Answer): giving
	// the grant back names it, so an answer that reached no one does not
	// take the grant from a later wait that was answered with it.
	Answer string
}

// MadeGrant reports whether this answer is allowed with a grant this wait
// made: the one kind that is given back when the answer reaches no one.
func (r WaitResult) MadeGrant() bool { return r.Decision == DecisionAllowed && r.NewGrant }

// timeoutMargin answers timed_out this long before the caller's deadline,
// so the client does not time out first.
func timeoutMargin(d time.Duration) time.Duration {
	return min(d/10, 500*time.Millisecond) + 50*time.Millisecond
}

// Answer gates: a round may make a grant (commit) only while its wait is
// still unanswered, and the wait may answer timed_out or cancelled only
// while no round is committing one. Whichever comes first wins.
const (
	gateOpen int32 = iota
	gateCommitting
	gateAnswered
)

// waitGate is that rule for one wait.
type waitGate struct{ state atomic.Int32 }

// commit reports whether the round may make its grant; the wait then takes
// the round's answer, whatever the deadline.
// A round's transaction may run its body again (a retried conflict), so a
// committing round may ask again.
func (g *waitGate) commit() bool {
	return g.state.CompareAndSwap(gateOpen, gateCommitting) || g.state.Load() == gateCommitting
}

// answer reports whether the wait may answer without the round.
func (g *waitGate) answer() bool { return g.state.CompareAndSwap(gateOpen, gateAnswered) }

// wait re-runs check whenever the thread changes (feed tells it; and at
// least every watcher.RecheckEvery()) until it decides, ctx ends (cancelled) or
// timeout is nearly over (timed_out). Nothing else wakes it: a wait costs
// nothing while its thread is quiet, however busy the others are.
//
// A round may block on the thread's row lock (a writer holds it), so it runs
// beside the deadline, and timed_out (or cancelled) is answered on time
// whatever the round is doing. check calls commit before making a grant
// (under the row lock): once the wait has answered, commit refuses and the
// round makes nothing; once a round is committing, the wait takes its
// answer. So no grant is ever made that its waiter does not hear of, and
// nothing needs giving back (a grant given back could already have been
// answered to a repeat wait of the same invocation).
func wait(ctx context.Context, feed ThreadFeed, threadID string, timeout time.Duration, check func(ctx context.Context, commit func() bool) (WaitResult, bool, error)) (WaitResult, error) {
	if timeout <= 0 || timeout > MaxWait {
		return WaitResult{}, domain.Invalid("timeoutMs", "timeoutMs must be between 1 and %d", MaxWait.Milliseconds())
	}
	watcher := feed.WatchThread(threadID)
	defer watcher.Stop()
	recheckEvery := watcher.RecheckEvery()
	recheck := time.NewTimer(recheckEvery)
	defer recheck.Stop()
	deadline := time.NewTimer(max(timeout-timeoutMargin(timeout), time.Millisecond))
	defer deadline.Stop()
	// A committing round is never cancelled (a cancelled COMMIT may still
	// have committed); a round that can no longer commit is.
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	var gate waitGate
	type round struct {
		r    WaitResult
		done bool
		err  error
	}
	end := func(ch <-chan round, r WaitResult) (WaitResult, error) {
		if gate.answer() {
			return r, nil // the round (if any) can no longer commit; cancel ends it
		}
		// A round is committing a grant: its answer is the wait's. That is an
		// INSERT and a COMMIT under a lock already held, but a retried
		// transaction would queue for the lock again: past half the margin
		// the wait answers anyway and the round is cancelled (its grant, in
		// that unlikely case, would stay unheard).
		wait := time.NewTimer(max(timeoutMargin(timeout)/2, 25*time.Millisecond))
		defer wait.Stop()
		select {
		case o := <-ch:
			if o.err == nil && !o.done {
				return r, nil
			}
			return o.r, o.err
		case <-wait.C:
			return r, nil
		}
	}
	for {
		changed := watcher.Changed() // taken before the check: a change during it wakes the next round
		ch := make(chan round, 1)
		go func() {
			release, err := feed.RoundSlot(rctx)
			if err != nil { // the wait ended while this round queued
				ch <- round{err: err}
				return
			}
			defer release()
			r, done, err := check(rctx, gate.commit)
			ch <- round{r, done, err}
		}()
		select {
		case o := <-ch:
			if o.err != nil || o.done {
				return o.r, o.err
			}
			// A retried transaction may have passed commit and then decided
			// nothing: the gate opens again for the next round.
			gate.state.CompareAndSwap(gateCommitting, gateOpen)
		case <-ctx.Done():
			return end(ch, WaitResult{Decision: DecisionCancelled, Message: "wait cancelled"})
		case <-deadline.C:
			return end(ch, WaitResult{Decision: DecisionTimedOut, Message: "no decision before the timeout"})
		}
		select { // no round runs here
		case <-ctx.Done():
			return WaitResult{Decision: DecisionCancelled, Message: "wait cancelled"}, nil
		case <-deadline.C:
			return WaitResult{Decision: DecisionTimedOut, Message: "no decision before the timeout"}, nil
		case <-changed:
		case <-recheck.C:
			recheck.Reset(recheckEvery)
		}
	}
}

// verdict maps a stored validation onto a wait decision.
func verdict(v *ports.ValidationRecord) WaitResult {
	if v == nil {
		return WaitResult{Decision: DecisionUnvalidated, Message: "the thread has no contract"}
	}
	issues, _ := v.Issues.([]domain.ValidationIssue)
	if v.OverallStatus == domain.ValidationViolated {
		msg := "step violated its contract"
		if len(issues) > 0 {
			msg = issues[0].Message
		}
		return WaitResult{Decision: DecisionViolated, Message: msg, Violations: issues}
	}
	return WaitResult{Decision: DecisionPassed, Violations: issues}
}

// ValidationVerdict is verdict for a result computed while recording.
func ValidationVerdict(v *domain.ValidationResult) WaitResult {
	if v == nil {
		return verdict(nil)
	}
	return verdict(&ports.ValidationRecord{OverallStatus: v.OverallStatus, Issues: v.Issues})
}

func checkInvocationID(id string) error {
	if utf8.RuneCountInString(id) > MaxInvocationIDLen {
		return domain.Invalid("invocationId", "invocationId must be at most %d characters", MaxInvocationIDLen)
	}
	return CheckInvocationPrefix(id)
}

// CheckInvocationPrefix refuses an invocation id in the engine's own
// namespace (domain.ReportInvocationPrefix names what an unguarded report
// consumed): a client naming one would take over that row as its grant.
func CheckInvocationPrefix(id string) error {
	if strings.HasPrefix(id, domain.ReportInvocationPrefix) {
		return domain.Invalid("invocationId", "invocationId must not start with %q (reserved by the engine)", domain.ReportInvocationPrefix)
	}
	return nil
}

// permission is one round of a wait for permission to run a step (the
// WaitForPermission handler's). It reads
// without locking first: most rounds of a wait decide
// nothing (the predecessor is not recorded yet) and every change of the
// thread wakes all its waiters, so only a round that would answer allowed (a new grant,
// or this invocation's grant asked for again, which the answer takes over)
// takes the thread's row lock, and decides again under it.
func (h WaitForPermissionHandler) permission(ctx context.Context, commit func() bool, p domain.Principal, c *domain.Contract, threadID, role, stepName, invocationID string) (WaitResult, bool, error) {
	decide := func(v ports.GrantTx) (domain.StepPermission, WaitResult, bool, error) {
		th := v.Thread
		if err := authz.CheckVisible(p, &th, now(h.clock)); err != nil {
			return domain.StepPermission{}, WaitResult{}, false, err
		}
		d := th.PermitStep(authz.Actor(p, role), c, stepName, invocationID, ports.Recorded(v.States), v.Grants, now(h.clock))
		switch {
		case d.Denied:
			return d, WaitResult{Decision: DecisionDenied, Code: d.Code, Message: d.Message, Violations: d.Issues}, true, nil
		case d.Allowed:
			return d, WaitResult{Decision: DecisionAllowed, NewGrant: d.New}, true, nil
		}
		return d, WaitResult{}, false, nil // a predecessor may still be recorded
	}
	v, err := h.grants.ReadGrants(ctx, threadID)
	if err != nil {
		return WaitResult{}, false, err
	}
	if d, r, done, err := decide(v); err != nil || !d.Allowed {
		return r, done, err
	}
	// Allowed: a new grant, or this invocation's grant asked for again
	// (an SDK that reconnected), which this answer takes over so that the
	// earlier answer, if it reached no one, does not give it back.
	var r WaitResult
	var done bool
	answer := uuid.NewString()
	err = h.grants.UpdateGrants(ctx, threadID, func(v ports.GrantTx) (*domain.StepGrant, error) {
		d, res, ok, err := decide(v)
		if err != nil {
			return nil, err
		}
		r, done = res, ok
		if !d.Allowed {
			return nil, nil
		}
		if !commit() { // the wait was answered meanwhile: grant nothing
			r, done = WaitResult{}, false
			return nil, nil
		}
		r.Answer = answer
		g := d.Grant
		g.Answer = answer
		return &g, nil
	})
	if err == nil && r.Answer != "" {
		h.feed.ThreadsChanged(threadID) // a repeat wait of this invocation answers too
	}
	return r, done, err
}
