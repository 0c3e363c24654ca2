package domain

import (
	"testing"
	"time"
)

func TestAppendMovesHeadCountAndHealthTogether(t *testing.T) {
	t.Parallel()
	var th Thread
	seq, prev := th.NextLink()
	if seq != 1 || prev != "" {
		t.Fatalf("first link %d %q", seq, prev)
	}
	th.Append("h1", StepOutcome{StepName: "a", Status: "failed", RecordedAt: time.Unix(10, 0)})
	th.Append("h2", StepOutcome{StepName: "b", Status: "success", RecordedAt: time.Unix(20, 0)})
	if seq, prev = th.NextLink(); seq != 3 || prev != "h2" || th.StepCount() != 2 || th.LastHash() != "h2" {
		t.Errorf("after two appends: next %d %q, head %d %q", seq, prev, th.StepCount(), th.LastHash())
	}
	if th.Health().FailedSteps != 1 || !th.Health().LastActivityAt.Equal(time.Unix(20, 0)) {
		t.Errorf("health %+v", th.Health())
	}
}

func TestAlertConditions(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		name             string
		status           ThreadStatus
		age, quiet       time.Duration
		overdue, silence bool
	}{
		{"young", ThreadActive, time.Minute, time.Minute, false, false},
		{"old and silent", ThreadActive, 2 * time.Hour, 2 * time.Hour, true, true},
		{"old, recently updated", ThreadActive, 2 * time.Hour, time.Second, true, false},
		{"closed", ThreadCompleted, 2 * time.Hour, 2 * time.Hour, false, false},
	} {
		th := Thread{Status: c.status, CreatedAt: t0.Add(-c.age), UpdatedAt: t0.Add(-c.quiet)}
		if _, got := th.Overdue(time.Hour, t0); got != c.overdue {
			t.Errorf("%s: overdue %v", c.name, got)
		}
		if _, got := th.Silent(time.Hour, t0); got != c.silence {
			t.Errorf("%s: silent %v", c.name, got)
		}
		if _, got := th.Silent(0, t0); got {
			t.Errorf("%s: silent with the check off", c.name)
		}
	}
}

func TestConnectionRoleAndResume(t *testing.T) {
	t.Parallel()
	th := Thread{ID: "t", Status: ThreadActive, ContractName: "order", ContractVersion: 2,
		Parties: []Party{{PrincipalID: "a", Role: "checkout"}, {PrincipalID: "b", Role: "x"}, {PrincipalID: "b", Role: "y"}}}
	for _, c := range []struct{ principal, declared, want string }{
		{"a", "", "checkout"}, {"a", "other", "other"}, {"b", "", ""}, {"c", "", ""},
	} {
		if got := th.ConnectionRole(c.principal, c.declared); got != c.want {
			t.Errorf("%s/%q: %q, want %q", c.principal, c.declared, got, c.want)
		}
	}
	for ref, code := range map[string]Code{"": "", "order": "", "order:2": "", "order:1": CodeContractConflict, "other": CodeContractConflict} {
		if got := CodeOf(th.CheckResume(ref)); got != code {
			t.Errorf("resume with %q: %q, want %q", ref, got, code)
		}
	}
	th.Status = ThreadCancelled
	if CodeOf(th.CheckResume("")) != CodeThreadClosed {
		t.Error("a closed thread resumed")
	}
	if DefaultTraceRole("checkout-service") != "checkout" || DefaultTraceRole("") != "participant" || DefaultTraceRole("-service") != "participant" {
		t.Error("default trace role")
	}
}

func TestTraceThreadTimesAndEnd(t *testing.T) {
	t.Parallel()
	now := time.Unix(10000, 0)
	th := Thread{Status: ThreadActive, CreatedAt: now, UpdatedAt: now}
	th.ObserveTrace(now.Add(-1500*time.Millisecond), time.Time{}, now)
	if !th.StartedAt().Equal(now.Add(-1500*time.Millisecond)) || th.TraceRootEndedAt() != nil {
		t.Fatalf("started %v, root %v", th.StartedAt(), th.TraceRootEndedAt())
	}
	// The thread's creation (list order, overdue alerts) never moves.
	if !th.CreatedAt.Equal(now) {
		t.Fatalf("created %v moved with the trace's start", th.CreatedAt)
	}
	th.ObserveTrace(now.Add(-time.Second), time.Time{}, now) // a later span does not move the start forward
	if !th.StartedAt().Equal(now.Add(-1500 * time.Millisecond)) {
		t.Fatalf("started %v after a later span", th.StartedAt())
	}
	th.ObserveTrace(now.Add(-100*24*time.Hour), now.Add(-50*time.Millisecond), now) // a wrong exporter clock
	if !th.StartedAt().Equal(now.Add(-MaxTraceSkew)) || !th.CreatedAt.Equal(now) {
		t.Errorf("started %v, created %v: moved further than MaxTraceSkew", th.StartedAt(), th.CreatedAt)
	}
	if th.EndTrace(nil, time.Minute, now.Add(30*time.Second)) {
		t.Error("ended within its quiet period")
	}
	spans := []SpanNode{{SpanID: "r", StepName: "root", End: now.Add(-50 * time.Millisecond)}}
	if !th.EndTrace(spans, time.Minute, now.Add(61*time.Second)) || th.Status != ThreadCompleted || !th.CompletedAt.Equal(now.Add(-50*time.Millisecond)) {
		t.Errorf("end: %s at %v", th.Status, th.CompletedAt)
	}
	c := Thread{Status: ThreadActive, ContractName: "order", CreatedAt: now, UpdatedAt: now}
	c.ObserveTrace(time.Time{}, now, now)
	if c.EndTrace(spans, time.Minute, now.Add(time.Hour)) || c.Status != ThreadActive {
		t.Error("a contract thread completed without its terminal step")
	}
	// Its trace is no longer watched: a quiet-trace pass must not pick it
	// again and again (a hundred such threads would starve every other).
	if c.TraceRootEndedAt() != nil || c.TraceQuiet(time.Minute, now.Add(2*time.Hour)) {
		t.Error("a contract thread left active is still due for ending")
	}
}
