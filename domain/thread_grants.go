package domain

import "time"

// GrantStatus is the state of a permission waitFor gave for one step
// invocation.
type GrantStatus string

const (
	// GrantAllowed: the invocation may run; its report carries the id.
	GrantAllowed GrantStatus = "allowed"
	// GrantCancelled: the caller gave the grant back (waitFor with cancel);
	// a report carrying its invocation id is refused (invocation_cancelled).
	GrantCancelled GrantStatus = "cancelled"
)

// StepGrant is the permission to run one invocation of a step (the waitFor
// action of the Python SDK 0.4.0), kept with the thread so every replica
// judges it under the thread's row lock.
type StepGrant struct {
	InvocationID string
	StepName     string
	PrincipalID  string
	Status       GrantStatus
	// Consumed is the id of the predecessor success the grant consumed (the
	// recorded attempt that made the step a valid transition); "" for an
	// entry point or a free-form thread, which consume nothing. A consumed
	// success enables no other grant, even once the grant is cancelled —
	// unless the step it was granted for is then recorded failed.
	Consumed string
	// FreshConsumed are the prerequisite successes ("must succeed before
	// each invocation") the invocation consumed; kept whatever becomes of
	// the grant (FreshConsumed).
	FreshConsumed []string
	GrantedAt     time.Time
	// Answer names the waitFor answer that holds an allowed grant; a wait
	// asking again with the same invocation id takes it over, so giving
	// back the grant of an answer that reached no one leaves it to the
	// later answer.
	Answer string
}

// grantOf returns the grant of invocationID, if any.
func grantOf(grants []StepGrant, invocationID string) *StepGrant {
	if invocationID == "" {
		return nil
	}
	for i := range grants {
		if grants[i].InvocationID == invocationID {
			return &grants[i]
		}
	}
	return nil
}

// consumed reports whether a grant already consumed the attempt stepID. A
// grant whose step was then recorded failed (or error) holds it no longer:
// the success enables the retry, under whatever new invocationId the SDK
// picks, instead of leaving the thread waiting for ever. history is ordered
// by latest attempt, oldest first.
func consumed(grants []StepGrant, stepID string, history []RecordedStep) bool {
	for _, g := range grants {
		if g.Consumed == stepID && !latestFailed(history, g.StepName) {
			return true
		}
	}
	return false
}

// latestFailed reports whether the latest recorded attempt of step failed.
func latestFailed(history []RecordedStep, step string) bool {
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Name == step {
			st := StepStatus(history[i].Status)
			return st == StepStatusFailed || st == StepStatusError
		}
	}
	return false
}

// CancelGrant gives back the grant of invocationID (waitFor with cancel):
// it becomes cancelled (a cancelled one is recorded when none was given, so
// a late report with that id is refused all the same). What it consumed
// stays consumed. Only the principal the grant was given to, or one that may
// record steps, may cancel it.
func (t *Thread) CancelGrant(a Actor, grants []StepGrant, stepName, invocationID string, now time.Time) (StepGrant, error) {
	if _, err := t.Authorize(a, ActRecordStep, now); err != nil {
		return StepGrant{}, err
	}
	if invocationID == "" {
		return StepGrant{}, Invalid("invocationId", "Missing required field: invocationId")
	}
	if g := grantOf(grants, invocationID); g != nil {
		out := *g
		out.Status = GrantCancelled
		return out, nil
	}
	return StepGrant{InvocationID: invocationID, StepName: stepName, PrincipalID: a.PrincipalID, Status: GrantCancelled,
		GrantedAt: now}, nil
}

// errInvocationCancelled refuses a report (or a new wait) under a grant the
// caller gave back.
func errInvocationCancelled(invocationID string) *Error {
	return E(KindConflict, CodeInvocationCancelled,
		"invocation %q was cancelled (its grant was given back); record the step under a new invocationId", invocationID)
}
