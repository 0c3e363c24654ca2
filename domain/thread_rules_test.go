package domain

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// twoParty is the README's contract: checkout owns the entry step, warehouse
// the terminal one.
func twoParty() *Contract {
	return &Contract{Name: "order", Version: 1, Parties: []string{"checkout", "warehouse"},
		EntryPoints: []string{"pay"}, TerminalSteps: []string{"ship"},
		Steps:       []ContractStep{{Name: "pay", Owner: "checkout", Required: []string{"amount"}}, {Name: "ship", Owner: "warehouse"}},
		Transitions: []Transition{{From: "pay", To: []string{"ship"}, CanRetry: true}}}
}

func exp(d time.Duration) *time.Time { t := t0.Add(d); return &t }

// thread is a contract thread started by principal "k1" as checkout, with
// extra parties.
func thread(extra ...Party) *Thread {
	th, err := NewThread("t1", Actor{PrincipalKind: "service_account", PrincipalID: "k1", Role: "checkout"}, twoParty(), t0)
	if err != nil {
		panic(err)
	}
	th.Parties = append(th.Parties, extra...)
	return &th
}

func party(id, role string, l AccessLevel, expires *time.Time) Party {
	return Party{PrincipalID: id, Role: role, Level: l, ExpiresAt: expires}
}

func TestAuthorizeRuleTable(t *testing.T) {
	t.Parallel()
	parties := []Party{
		party("part", "warehouse", AccessParticipant, nil),
		party("ext", "warehouse", AccessExternal, nil),
		party("obs", "warehouse", AccessObserver, nil),
		party("late", "warehouse", AccessParticipant, exp(time.Minute)),
		party("two", "checkout", AccessParticipant, nil), party("two", "warehouse", AccessParticipant, nil),
	}
	// want per action in ThreadActions order: record, refs, invite, complete, cancel.
	for _, c := range []struct {
		actor Actor
		now   time.Time
		want  [5]Code
	}{
		{Actor{PrincipalID: "k1", Role: "checkout"}, t0, [5]Code{"", "", "", "", ""}},
		{Actor{PrincipalID: "k1"}, t0, [5]Code{"", "", "", "", ""}}, // its only party
		{Actor{PrincipalID: "k1", Role: "warehouse"}, t0, [5]Code{CodeNotAParty, CodeNotAParty, CodeNotAParty, CodeNotAParty, CodeNotAParty}},
		{Actor{PrincipalID: "part"}, t0, [5]Code{"", "", CodeInsufficientAccess, CodeInsufficientAccess, CodeInsufficientAccess}},
		{Actor{PrincipalID: "ext", Role: "warehouse"}, t0, [5]Code{"", "", CodeInsufficientAccess, CodeInsufficientAccess, CodeInsufficientAccess}},
		{Actor{PrincipalID: "obs"}, t0, [5]Code{CodeInsufficientAccess, CodeInsufficientAccess, CodeInsufficientAccess, CodeInsufficientAccess, CodeInsufficientAccess}},
		{Actor{PrincipalID: "late"}, t0, [5]Code{"", "", CodeInsufficientAccess, CodeInsufficientAccess, CodeInsufficientAccess}},
		{Actor{PrincipalID: "late"}, t0.Add(time.Minute), [5]Code{CodeGrantExpired, CodeGrantExpired, CodeGrantExpired, CodeGrantExpired, CodeGrantExpired}},
		{Actor{PrincipalID: "admin"}, t0, [5]Code{CodeNotAParty, CodeNotAParty, CodeNotAParty, CodeNotAParty, CodeNotAParty}},
		{Actor{PrincipalID: "two"}, t0, [5]Code{CodeAmbiguousParty, CodeAmbiguousParty, CodeAmbiguousParty, CodeAmbiguousParty, CodeAmbiguousParty}},
		{Actor{PrincipalID: "two", Role: "warehouse"}, t0, [5]Code{"", "", CodeInsufficientAccess, CodeInsufficientAccess, CodeInsufficientAccess}},
		// A party-scoped principal is told a thread it holds no live party on
		// does not exist, as reads tell it; in scope, the same rules apply.
		{Actor{PrincipalID: "admin", Scoped: true}, t0, [5]Code{CodeNotFound, CodeNotFound, CodeNotFound, CodeNotFound, CodeNotFound}},
		{Actor{PrincipalID: "late", Scoped: true}, t0.Add(time.Minute), [5]Code{CodeNotFound, CodeNotFound, CodeNotFound, CodeNotFound, CodeNotFound}},
		{Actor{PrincipalID: "k1", Role: "warehouse", Scoped: true}, t0, [5]Code{CodeNotAParty, CodeNotAParty, CodeNotAParty, CodeNotAParty, CodeNotAParty}},
		{Actor{PrincipalID: "obs", Scoped: true}, t0, [5]Code{CodeInsufficientAccess, CodeInsufficientAccess, CodeInsufficientAccess, CodeInsufficientAccess, CodeInsufficientAccess}},
	} {
		th := thread(parties...)
		for i, act := range ThreadActions {
			p, err := th.Authorize(c.actor, act, c.now)
			if got := CodeOf(err); got != c.want[i] {
				t.Errorf("%+v may %s: got %q (%v), want %q", c.actor, act, got, err, c.want[i])
			}
			if err == nil && c.actor.Role != "" && p.Role != c.actor.Role {
				t.Errorf("%+v acted as %q", c.actor, p.Role)
			}
		}
	}
}

func TestJoin(t *testing.T) {
	t.Parallel()
	inv := func(role string, l AccessLevel, d time.Duration) *Invitation {
		return &Invitation{ThreadID: "t1", Role: role, Level: l, InvitedBy: "k1", ExpiresAt: t0.Add(d)}
	}
	for _, c := range []struct {
		name      string
		extra     []Party
		actor     Actor
		inv       *Invitation
		wantCode  Code
		wantRole  string
		wantLevel AccessLevel
		changed   bool
	}{
		{name: "owner key adds a role by id as participant", actor: Actor{PrincipalID: "k1", Role: "warehouse"},
			wantRole: "warehouse", wantLevel: AccessParticipant, changed: true},
		{name: "owner key re-attaches its owner party", actor: Actor{PrincipalID: "k1", Role: "checkout"},
			wantRole: "checkout", wantLevel: AccessOwner},
		{name: "owner key without role: its only party", actor: Actor{PrincipalID: "k1"}, wantRole: "checkout", wantLevel: AccessOwner},
		{name: "owner key, role not a party of the contract", actor: Actor{PrincipalID: "k1", Role: "bank"}, wantCode: CodeValidationFailed},
		{name: "stranger by id needs an invitation", actor: Actor{PrincipalID: "k2", Role: "warehouse"}, wantCode: CodeNotAParty},
		{name: "admin by id is no exception", actor: Actor{PrincipalID: "admin"}, wantCode: CodeNotAParty},
		{name: "observer re-joins by id and stays observer", extra: []Party{party("k2", "warehouse", AccessObserver, exp(time.Hour))},
			actor: Actor{PrincipalID: "k2"}, wantRole: "warehouse", wantLevel: AccessObserver},
		{name: "observer asks by id for another role", extra: []Party{party("k2", "warehouse", AccessObserver, nil)},
			actor: Actor{PrincipalID: "k2", Role: "checkout"}, wantCode: CodeNotAParty},
		{name: "expired party re-joins by id", extra: []Party{party("k2", "warehouse", AccessParticipant, exp(-time.Minute))},
			actor: Actor{PrincipalID: "k2"}, wantCode: CodeGrantExpired},
		{name: "invitation grants its role and level", actor: Actor{PrincipalID: "k2"}, inv: inv("warehouse", AccessObserver, time.Hour),
			wantRole: "warehouse", wantLevel: AccessObserver, changed: true},
		{name: "invitation never lowers a higher party", actor: Actor{PrincipalID: "k1"}, inv: inv("checkout", AccessObserver, time.Hour),
			wantRole: "checkout", wantLevel: AccessOwner},
		{name: "invitation raises an observer only to its level", extra: []Party{party("k2", "warehouse", AccessObserver, nil)},
			actor: Actor{PrincipalID: "k2"}, inv: inv("warehouse", AccessParticipant, time.Hour), wantRole: "warehouse", wantLevel: AccessParticipant, changed: true},
		{name: "expired invitation", actor: Actor{PrincipalID: "k2"}, inv: inv("warehouse", AccessParticipant, 0), wantCode: CodeGrantExpired},
		{name: "invitation for another role than asked", actor: Actor{PrincipalID: "k2", Role: "checkout"}, inv: inv("warehouse", AccessParticipant, time.Hour), wantCode: CodeValidationFailed},
		{name: "several parties, no role", extra: []Party{party("k2", "checkout", AccessParticipant, nil), party("k2", "warehouse", AccessParticipant, nil)},
			actor: Actor{PrincipalID: "k2"}, wantCode: CodeAmbiguousParty},
	} {
		t.Run(c.name, func(t *testing.T) {
			th := thread(c.extra...)
			p, changed, err := th.Join(c.actor, c.inv, twoParty(), t0)
			if got := CodeOf(err); got != c.wantCode {
				t.Fatalf("code %q (%v), want %q", got, err, c.wantCode)
			}
			if err != nil {
				return
			}
			if p.Role != c.wantRole || p.Level != c.wantLevel || changed != c.changed {
				t.Fatalf("party %s/%s changed=%v, want %s/%s changed=%v", p.Role, p.Level, changed, c.wantRole, c.wantLevel, c.changed)
			}
			if c.inv != nil && changed && (p.ExpiresAt == nil || !p.ExpiresAt.Equal(c.inv.ExpiresAt)) {
				t.Fatalf("grant expiry %v, want the invitation's %v", p.ExpiresAt, c.inv.ExpiresAt)
			}
			// The joined party is the one later writes act under.
			if got, err := th.Authorize(Actor{PrincipalID: c.actor.PrincipalID, Role: p.Role}, ActRecordStep, t0); changed &&
				(c.wantLevel == AccessObserver) != (err != nil) {
				t.Fatalf("after join, record as %s: %+v %v", p.Role, got, err)
			}
		})
	}
}

func TestRecordStep(t *testing.T) {
	t.Parallel()
	checkout := Actor{PrincipalID: "k1", Role: "checkout"}
	warehouse := Actor{PrincipalID: "k1", Role: "warehouse"}
	paid := []RecordedStep{{Name: "pay", Status: "success", RecordedAt: t0, Attempt: 1}}
	for _, c := range []struct {
		name       string
		actor      Actor
		status     ThreadStatus
		step       string
		stepStatus StepStatus
		inv        string
		cur        *StepIdentity
		history    []RecordedStep
		wantCode   Code
		dup, same  bool
		attempt    int
		ended      ThreadStatus
		issue      string
	}{
		{name: "entry step by its owner", actor: checkout, step: "pay", stepStatus: StepStatusSuccess, attempt: 1,
			issue: IssueMissingRequiredField}, // a non-terminal major violation: recorded, the thread goes on
		{name: "terminal by its owner completes", actor: warehouse, step: "ship", stepStatus: StepStatusSuccess, history: paid, attempt: 1, ended: ThreadCompleted},
		{name: "terminal by the wrong party fails the thread", actor: checkout, step: "ship", stepStatus: StepStatusSuccess, history: paid, attempt: 1,
			ended: ThreadFailed, issue: IssueUnauthorizedOwner},
		{name: "non-terminal critical violation fails the thread", actor: warehouse, step: "pay", stepStatus: StepStatusSuccess, attempt: 1,
			ended: ThreadFailed, issue: IssueUnauthorizedOwner},
		{name: "failed terminal attempt leaves it active", actor: warehouse, step: "ship", stepStatus: StepStatusFailed, history: paid, attempt: 1},
		{name: "skipped terminal does not complete", actor: warehouse, step: "ship", stepStatus: StepStatusSkipped, history: paid, attempt: 1},
		{name: "retry of a failed attempt", actor: checkout, step: "pay", stepStatus: StepStatusSuccess,
			cur: &StepIdentity{Status: "failed", RetryCount: 0, InvocationID: "i1"}, inv: "i2", attempt: 2},
		{name: "re-sent attempt (same invocation) is a duplicate", actor: checkout, step: "pay", stepStatus: StepStatusFailed,
			cur: &StepIdentity{Status: "failed", InvocationID: "i1"}, inv: "i1", dup: true, same: true, attempt: 1},
		{name: "after a success it is a duplicate", actor: checkout, step: "pay", stepStatus: StepStatusSuccess,
			cur: &StepIdentity{Status: "success", RetryCount: 1}, dup: true, attempt: 2},
		{name: "duplicate answered on a closed thread", actor: checkout, status: ThreadCompleted, step: "pay", stepStatus: StepStatusSuccess,
			cur: &StepIdentity{Status: "success"}, dup: true, attempt: 1},
		{name: "new step on a closed thread", actor: checkout, status: ThreadCancelled, step: "pay", stepStatus: StepStatusSuccess, wantCode: CodeThreadClosed},
		{name: "unjoined writer", actor: Actor{PrincipalID: "k9"}, step: "ship", stepStatus: StepStatusSuccess, wantCode: CodeNotAParty},
	} {
		t.Run(c.name, func(t *testing.T) {
			th := thread()
			th.Parties = append(th.Parties, party("k1", "warehouse", AccessParticipant, nil))
			if c.status != "" {
				th.Status = c.status
			}
			before := th.Status
			d, err := th.RecordStep(c.actor, twoParty(), StepAttempt{Name: c.step, IdempotencyKey: "k", InvocationID: c.inv,
				Status: c.stepStatus, Context: map[string]string{}}, c.cur, c.history, t0)
			if got := CodeOf(err); got != c.wantCode {
				t.Fatalf("code %q (%v), want %q", got, err, c.wantCode)
			}
			if err != nil {
				if th.Status != before {
					t.Fatal("a refused step changed the thread")
				}
				return
			}
			if d.Duplicate != c.dup || d.SameInvocation != c.same || d.Attempt != c.attempt || d.Ended != c.ended {
				t.Fatalf("decision %+v, want dup=%v same=%v attempt=%d ended=%q", d, c.dup, c.same, c.attempt, c.ended)
			}
			if c.dup && d.Validation != nil {
				t.Fatal("a duplicate was validated")
			}
			if c.ended != "" && (th.Status != c.ended || th.CompletedAt == nil) {
				t.Fatalf("thread %s completed %v, want %s", th.Status, th.CompletedAt, c.ended)
			}
			if c.ended == "" && !c.dup && th.Status != ThreadActive {
				t.Fatalf("thread %s, want active", th.Status)
			}
			if c.issue != "" {
				if d.Validation == nil || !hasIssue(d.Validation.Issues, c.issue) {
					t.Fatalf("validation %+v, want issue %s", d.Validation, c.issue)
				}
				if c.ended == ThreadFailed && !strings.Contains(th.Error, "owned by") {
					t.Fatalf("failed thread's error %q does not name the violation", th.Error)
				}
			}
			if d.Party.Role != c.actor.Role {
				t.Fatalf("judged as %q, want the connection's role %q", d.Party.Role, c.actor.Role)
			}
		})
	}
}

func hasIssue(is []ValidationIssue, typ string) bool {
	for _, i := range is {
		if i.Type == typ {
			return true
		}
	}
	return false
}

func TestEnd(t *testing.T) {
	t.Parallel()
	owner := Actor{PrincipalID: "k1", Role: "checkout"}
	for _, c := range []struct {
		name     string
		actor    Actor
		free     bool
		from     ThreadStatus
		to       ThreadStatus
		wantCode Code
		changed  bool
	}{
		{name: "owner cancels", actor: owner, from: ThreadActive, to: ThreadCancelled, changed: true},
		{name: "cancel again is a no-op", actor: owner, from: ThreadCancelled, to: ThreadCancelled},
		{name: "cancel a completed thread", actor: owner, from: ThreadCompleted, to: ThreadCancelled, wantCode: CodeThreadClosed},
		{name: "complete a contract thread by hand", actor: owner, from: ThreadActive, to: ThreadCompleted, wantCode: CodeInvalidStatusTransition},
		{name: "complete a free-form thread", actor: owner, free: true, from: ThreadActive, to: ThreadCompleted, changed: true},
		{name: "participant cancels", actor: Actor{PrincipalID: "p"}, from: ThreadActive, to: ThreadCancelled, wantCode: CodeInsufficientAccess},
		{name: "observer completes", actor: Actor{PrincipalID: "o"}, free: true, from: ThreadActive, to: ThreadCompleted, wantCode: CodeInsufficientAccess},
		{name: "stranger cancels", actor: Actor{PrincipalID: "x"}, from: ThreadActive, to: ThreadCancelled, wantCode: CodeNotAParty},
	} {
		t.Run(c.name, func(t *testing.T) {
			th := thread(party("p", "warehouse", AccessParticipant, nil), party("o", "warehouse", AccessObserver, nil))
			if c.free {
				th.ContractName = ""
			}
			th.Status = c.from
			changed, err := th.End(c.actor, c.to, "customer left", t0)
			if got := CodeOf(err); got != c.wantCode || changed != c.changed {
				t.Fatalf("code %q changed %v (%v), want %q %v", got, changed, err, c.wantCode, c.changed)
			}
			if changed && (th.Status != c.to || th.CompletedAt == nil) {
				t.Fatalf("thread %s %v", th.Status, th.CompletedAt)
			}
			if changed && c.to == ThreadCancelled && (th.EndReason != "customer left" || th.Error != "") {
				t.Fatalf("reason %q error %q: the reason is not an error", th.EndReason, th.Error)
			}
		})
	}
}

func TestInvite(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		actor    Actor
		role     string
		level    AccessLevel
		wantCode Code
	}{
		{Actor{PrincipalID: "k1"}, "warehouse", AccessObserver, ""},
		{Actor{PrincipalID: "k1"}, "warehouse", AccessOwner, CodeValidationFailed},
		{Actor{PrincipalID: "k1"}, "bank", AccessParticipant, CodeValidationFailed},
		{Actor{PrincipalID: "k1"}, "", AccessParticipant, CodeValidationFailed},
		{Actor{PrincipalID: "p"}, "warehouse", AccessObserver, CodeInsufficientAccess},
		{Actor{PrincipalID: "x"}, "warehouse", AccessObserver, CodeNotAParty},
	} {
		th := thread(party("p", "warehouse", AccessParticipant, nil))
		if _, err := th.Invite(c.actor, c.role, c.level, twoParty(), t0); CodeOf(err) != c.wantCode {
			t.Errorf("%+v invites %s/%s: %v, want %q", c.actor, c.role, c.level, err, c.wantCode)
		}
	}
}

func TestInviteTarget(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		explicit string
		held     []string
		want     string
		code     Code
	}{
		{"t9", []string{"t1", "t2"}, "t9", ""},
		{"", []string{"t1"}, "t1", ""},
		{"", nil, "", CodeValidationFailed},
		{"", []string{"t1", "t2"}, "", CodeAmbiguousThread},
	} {
		got, err := InviteTarget(c.explicit, c.held)
		if got != c.want || CodeOf(err) != c.code {
			t.Errorf("InviteTarget(%q, %v) = %q, %v; want %q, %q", c.explicit, c.held, got, err, c.want, c.code)
		}
	}
}

func TestParseStepStatus(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"success", "failed", "error", "skipped", "in_progress"} {
		if got, err := ParseStepStatus(s); err != nil || string(got) != s {
			t.Errorf("ParseStepStatus(%q) = %q, %v", s, got, err)
		}
	}
	for _, s := range []string{"bogus", "", "SUCCESS", "completed"} {
		_, err := ParseStepStatus(s)
		if CodeOf(err) != CodeInvalidStepStatus || !strings.Contains(AsError(err).Message, "success, failed, error, skipped, in_progress") {
			t.Errorf("ParseStepStatus(%q): %v", s, err)
		}
	}
	if _, err := ParseSubStepStatus("skipped"); CodeOf(err) != CodeInvalidStepStatus {
		t.Errorf("sub-step skipped: %v", err)
	}
	if s, err := ParseSubStepStatus(""); err != nil || s != StepStatusSuccess {
		t.Errorf("sub-step default: %q %v", s, err)
	}
}

func TestParseContractRefVersions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		name string
		ver  int
		ok   bool
	}{
		{"order", "order", 0, true}, {"order:2", "order", 2, true}, {"order:v2", "order", 2, true}, {"order:V3", "order", 3, true},
		{"order:v", "", 0, false}, {"order:v-1", "", 0, false}, {"order:x2", "", 0, false}, {"order:+2", "", 0, false}, {"order:0", "", 0, false},
	} {
		n, v, err := ParseContractRef(c.in)
		if (err == nil) != c.ok || n != c.name || v != c.ver {
			t.Errorf("ParseContractRef(%q) = %q, %d, %v", c.in, n, v, err)
		}
	}
}

// A contract without parties or owners is open: every SDK can start and join
// its threads, whatever role (or none) it sends.
func TestOpenContractAcceptsAnyRole(t *testing.T) {
	t.Parallel()
	c, err := ParseContract([]byte("contract_name: open\nversion: 1\nentry_points: [a]\nsteps: [{id: a}, {id: b}]\ntransitions: [{from: a, to: b}]\nterminal_steps: [b]\n"))
	if err != nil || !c.Open() {
		t.Fatalf("parse: %v open=%v", err, c.Open())
	}
	for _, role := range []string{"participant", "", "checkout"} {
		th, err := NewThread("t", Actor{PrincipalID: "k", Role: role}, &c, t0)
		if err != nil {
			t.Fatalf("start as %q: %v", role, err)
		}
		if _, _, err := th.Join(Actor{PrincipalID: "k", Role: "other"}, nil, &c, t0); err != nil {
			t.Fatalf("owner adds a role on an open contract: %v", err)
		}
	}
}

// Transition timeout: accepted in the YAML, and the next step recorded later
// than it after the source's success is a major step_timeout_exceeded.
func TestTransitionTimeout(t *testing.T) {
	t.Parallel()
	c, err := ParseContract([]byte("contract_name: tt\nversion: 1\nentry_points: [a]\nparties: [p]\nsteps: [{id: a, owner: p}, {id: b, owner: p}]\n" +
		"transitions: [{from: a, to: b, timeout: 2m}]\nterminal_steps: [b]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tr, _ := c.Transition("a"); tr.Timeout != 2*time.Minute {
		t.Fatalf("timeout %v", tr.Timeout)
	}
	hist := []RecordedStep{{Name: "a", Status: "success", RecordedAt: t0, Attempt: 1}}
	in := StepInput{Name: "b", Status: "success", Attempt: 1, Party: "p"}
	if r := ValidateStep(c, ThreadSnapshot{StartedAt: t0, Steps: hist}, in, t0.Add(time.Minute)); len(r.Issues) != 0 {
		t.Fatalf("within the timeout: %+v", r.Issues)
	}
	r := ValidateStep(c, ThreadSnapshot{StartedAt: t0, Steps: hist}, in, t0.Add(3*time.Minute))
	if len(r.Issues) != 1 || r.Issues[0].Type != IssueStepTimeoutExceeded || r.Issues[0].Rule != RuleTransitionTimeout || r.Issues[0].Severity != SeverityMajor {
		t.Fatalf("late: %+v", r.Issues)
	}
	if _, err := ParseContract([]byte("contract_name: tt\nversion: 1\nentry_points: [a]\nsteps: [{id: a}]\ntransitions: [{from: a, to: a, timeout: soon}]\n")); err == nil ||
		!strings.Contains(ContractProblems(err)[0].Field, "transitions[0].timeout") {
		t.Fatalf("bad timeout: %v", err)
	}
}
