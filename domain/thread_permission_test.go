package domain

import (
	"testing"
	"time"
)

// PermitStep answers waitFor by RecordStep's rules, without recording.
func TestPermitStep(t *testing.T) {
	t.Parallel()
	c := twoParty()
	paid := []RecordedStep{{ID: "a1", Name: "pay", Status: string(StepStatusSuccess), RecordedAt: t0, Attempt: 1}}
	closed := thread()
	closed.Status = ThreadCancelled
	free, _ := NewThread("t2", Actor{PrincipalID: "k1"}, nil, t0)
	for _, tc := range []struct {
		name    string
		th      *Thread
		c       *Contract
		actor   Actor
		step    string
		history []RecordedStep
		want    string // allowed, denied, wait
	}{
		{"entry point of its own party", thread(), c, Actor{PrincipalID: "k1"}, "pay", nil, "allowed"},
		{"another party's step", thread(), c, Actor{PrincipalID: "k1"}, "ship", paid, "denied"},
		{"step outside the contract", thread(), c, Actor{PrincipalID: "k1"}, "refund", nil, "denied"},
		{"not a party", thread(), c, Actor{PrincipalID: "stranger"}, "pay", nil, "denied"},
		{"observer", thread(party("obs", "warehouse", AccessObserver, nil)), c, Actor{PrincipalID: "obs"}, "ship", paid, "denied"},
		{"expired grant", thread(party("late", "warehouse", AccessParticipant, exp(-time.Minute))), c, Actor{PrincipalID: "late"}, "ship", paid, "denied"},
		{"closed thread", closed, c, Actor{PrincipalID: "k1"}, "pay", nil, "denied"},
		{"predecessor not recorded yet", thread(party("wh", "warehouse", AccessParticipant, nil)), c, Actor{PrincipalID: "wh"}, "ship", nil, "wait"},
		{"predecessor recorded", thread(party("wh", "warehouse", AccessParticipant, nil)), c, Actor{PrincipalID: "wh"}, "ship", paid, "allowed"},
		{"free-form thread", &free, nil, Actor{PrincipalID: "k1"}, "anything", nil, "allowed"},
	} {
		d := tc.th.PermitStep(tc.actor, tc.c, tc.step, "inv-1", tc.history, nil, t0)
		got := "wait"
		switch {
		case d.Allowed && d.Denied:
			t.Fatalf("%s: allowed and denied", tc.name)
		case d.Allowed:
			got = "allowed"
		case d.Denied:
			got = "denied"
			if d.Message == "" {
				t.Errorf("%s: denied without a reason", tc.name)
			}
		}
		if got != tc.want {
			t.Errorf("%s: %s (%+v), want %s", tc.name, got, d, tc.want)
		}
	}
}

// A fresh predecessor success is consumed by the grant it enables: a second
// invocation waits for the next success; the same invocation is allowed
// again; a given-back one is refused, and what it consumed stays consumed.
func TestPermitStepConsumesPredecessor(t *testing.T) {
	t.Parallel()
	c := twoParty()
	th := thread(party("wh", "warehouse", AccessParticipant, nil))
	wh := Actor{PrincipalID: "wh"}
	paid := []RecordedStep{{ID: "a1", Name: "pay", Status: string(StepStatusSuccess), RecordedAt: t0, Attempt: 1}}

	first := th.PermitStep(wh, c, "ship", "inv-1", paid, nil, t0)
	if !first.Allowed || !first.New || first.Grant.Consumed != "a1" || first.Grant.InvocationID != "inv-1" ||
		first.Grant.Status != GrantAllowed || first.Grant.PrincipalID != "wh" {
		t.Fatalf("first grant %+v", first)
	}
	grants := []StepGrant{first.Grant}
	if d := th.PermitStep(wh, c, "ship", "inv-2", paid, grants, t0); d.Allowed || d.Denied {
		t.Fatalf("second invocation on the same success: %+v, want wait", d)
	}
	if d := th.PermitStep(wh, c, "ship", "inv-1", paid, grants, t0); !d.Allowed || d.New {
		t.Fatalf("the same invocation again: %+v, want allowed, nothing new", d)
	}
	if d := th.PermitStep(wh, c, "pay", "inv-1", paid, grants, t0); !d.Denied {
		t.Fatalf("the invocation of another step: %+v, want denied", d)
	}
	// A newer success of the predecessor enables the next grant.
	paidAgain := append(paid, RecordedStep{ID: "a2", Name: "pay", Status: string(StepStatusSuccess), RecordedAt: t0, Attempt: 1})
	if d := th.PermitStep(wh, c, "ship", "inv-2", paidAgain, grants, t0); !d.Allowed || d.Grant.Consumed != "a2" {
		t.Fatalf("after a fresh success: %+v", d)
	}

	// The granted step failed: its predecessor's success enables the retry,
	// under a new invocation, instead of leaving the thread waiting.
	shipFailed := append(append([]RecordedStep{}, paid...),
		RecordedStep{ID: "a3", Name: "ship", Status: string(StepStatusFailed), RecordedAt: t0.Add(time.Second), Attempt: 1})
	if d := th.PermitStep(wh, c, "ship", "inv-2", shipFailed, grants, t0); !d.Allowed || !d.New || d.Grant.Consumed != "a1" {
		t.Fatalf("retry after the granted step failed: %+v, want a new grant on a1", d)
	}
	shipOK := append(append([]RecordedStep{}, paid...),
		RecordedStep{ID: "a3", Name: "ship", Status: string(StepStatusInProgress), RecordedAt: t0.Add(time.Second), Attempt: 1})
	if d := th.PermitStep(wh, c, "ship", "inv-2", shipOK, grants, t0); d.Allowed {
		t.Fatalf("the granted step still running: %+v, want wait", d)
	}

	cancelled, err := th.CancelGrant(wh, grants, "ship", "inv-1", t0)
	if err != nil || cancelled.Status != GrantCancelled || cancelled.Consumed != "a1" {
		t.Fatalf("cancel: %+v, %v", cancelled, err)
	}
	grants = []StepGrant{cancelled}
	if d := th.PermitStep(wh, c, "ship", "inv-1", paid, grants, t0); !d.Denied || d.Code != CodeInvocationCancelled {
		t.Fatalf("waiting again under a cancelled invocation: %+v", d)
	}
	if d := th.PermitStep(wh, c, "ship", "inv-3", paid, grants, t0); d.Allowed || d.Denied {
		t.Fatalf("a cancelled grant's success is not restored: %+v, want wait", d)
	}
	// Cancelling an id never granted records it cancelled all the same.
	if g, err := th.CancelGrant(wh, nil, "ship", "never", t0); err != nil || g.Status != GrantCancelled || g.Consumed != "" {
		t.Fatalf("cancel of an unknown invocation: %+v, %v", g, err)
	}
	if _, err := th.CancelGrant(Actor{PrincipalID: "stranger"}, nil, "ship", "x", t0); CodeOf(err) != CodeNotAParty {
		t.Fatalf("a stranger cancels: %v", err)
	}

	// Free-form threads and entry points consume nothing.
	free, _ := NewThread("t2", Actor{PrincipalID: "k1"}, nil, t0)
	if d := free.PermitStep(Actor{PrincipalID: "k1"}, nil, "x", "i", nil, nil, t0); !d.Allowed || d.Grant.Consumed != "" {
		t.Fatalf("free-form %+v", d)
	}
	if d := th.PermitStep(Actor{PrincipalID: "k1"}, c, "pay", "i", nil, grants, t0); !d.Allowed || d.Grant.Consumed != "" {
		t.Fatalf("entry point %+v", d)
	}
}

// A report under a cancelled invocation is refused with invocation_cancelled;
// a re-sent report of an attempt already recorded under it is still its
// duplicate.
func TestRecordStepRefusesCancelledInvocation(t *testing.T) {
	t.Parallel()
	th := thread(party("wh", "warehouse", AccessParticipant, nil))
	in := StepAttempt{Name: "ship", IdempotencyKey: "inv-1", InvocationID: "inv-1", Grant: GrantCancelled, Status: StepStatusSuccess}
	paid := []RecordedStep{{ID: "a1", Name: "pay", Status: string(StepStatusSuccess), RecordedAt: t0, Attempt: 1}}
	_, err := th.RecordStep(Actor{PrincipalID: "wh"}, twoParty(), in, nil, paid, t0)
	if CodeOf(err) != CodeInvocationCancelled || KindOf(err) != KindConflict {
		t.Fatalf("report under a cancelled grant: %v", err)
	}
	cur := &StepIdentity{Status: string(StepStatusSuccess), InvocationID: "inv-1", LatestStepID: "s1"}
	if d, err := th.RecordStep(Actor{PrincipalID: "wh"}, twoParty(), in, cur, paid, t0); err != nil || !d.Duplicate || !d.SameInvocation {
		t.Fatalf("re-sent attempt recorded before the cancel: %+v, %v", d, err)
	}
	in.Grant = GrantAllowed
	if d, err := th.RecordStep(Actor{PrincipalID: "wh"}, twoParty(), in, nil, paid, t0); err != nil || d.Duplicate {
		t.Fatalf("report under its grant: %+v, %v", d, err)
	}
}
