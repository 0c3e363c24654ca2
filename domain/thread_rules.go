package domain

import (
	"sort"
	"strconv"
	"strings"
	"time"
)

// The write rules of a thread. Every write goes through Authorize first:
//
//	party-scoped principal, no live party       → not_found (as for reads)
//	no party of the principal on the thread     → not_a_party (admins too)
//	the connection's role is not one of them    → not_a_party
//	no role given and several parties           → ambiguous_party
//	the party's grant has expired               → grant_expired
//	the party's level is below the action's     → insufficient_access
//
// Minimum levels (ThreadAction.MinLevel): record a step and add refs need
// external (external, participant, owner); invite, complete and cancel need
// owner. Observers never write.

// Authorize returns the party under which actor may do act on the thread.
func (t *Thread) Authorize(a Actor, act ThreadAction, now time.Time) (Party, error) {
	if a.Scoped && t.HiddenFrom(a.PrincipalID, now) {
		return Party{}, NotFound("thread") // exactly what an unknown id gets
	}
	p, err := t.partyOf(a)
	if err != nil {
		return Party{}, err
	}
	if p.Expired(now) {
		return Party{}, E(KindForbidden, CodeGrantExpired, "your access to thread %s as %s expired at %s; ask its owner for a new invitation",
			t.ID, roleName(p.Role), p.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if !p.Level.AtLeast(act.MinLevel()) {
		return Party{}, E(KindForbidden, CodeInsufficientAccess, "%s access to thread %s cannot %s (needs %s)",
			p.Level, t.ID, act, act.MinLevel())
	}
	return p, nil
}

// HiddenFrom reports whether the thread is outside a party-scoped
// principal's view: it neither started it nor holds an unexpired party on
// it. Reads and writes answer such a thread exactly as an unknown one.
func (t *Thread) HiddenFrom(principalID string, now time.Time) bool {
	if t.OwnerID == principalID {
		return false
	}
	for _, q := range t.Parties {
		if q.PrincipalID == principalID && !q.Expired(now) {
			return false
		}
	}
	return true
}

// partyOf finds the actor's party: the one of its connection's role, or its
// only one when the connection declared none.
func (t *Thread) partyOf(a Actor) (Party, error) {
	mine := t.partiesOf(a.PrincipalID)
	if len(mine) == 0 {
		return Party{}, E(KindForbidden, CodeNotAParty,
			"you are not a party of thread %s: start it, or join it with an invitation from its owner", t.ID)
	}
	if a.Role != "" {
		for _, p := range mine {
			if p.Role == a.Role {
				return p, nil
			}
		}
		return Party{}, E(KindForbidden, CodeNotAParty, "you hold no party %q on thread %s (yours: %s); join it as %q first",
			a.Role, t.ID, rolesOf(mine), a.Role)
	}
	if len(mine) > 1 {
		return Party{}, E(KindInvalid, CodeAmbiguousParty,
			"you hold several parties on thread %s (%s): join it with the role this connection acts as", t.ID, rolesOf(mine))
	}
	return mine[0], nil
}

// CheckResume refuses resuming the thread (a known application key or
// trace) when it is closed, or with a contract (contractRef, "" for any)
// other than its own.
func (t *Thread) CheckResume(contractRef string) error {
	if t.Status.Closed() {
		return E(KindConflict, CodeThreadClosed, "thread is closed (%s)", t.Status)
	}
	if strings.TrimSpace(contractRef) == "" {
		return nil
	}
	name, version, err := ParseContractRef(contractRef)
	if err != nil {
		return err
	}
	if name != t.ContractName || version != 0 && version != t.ContractVersion {
		stored := "free-form"
		if t.HasContract() {
			stored = t.ContractName + ":" + strconv.Itoa(t.ContractVersion)
		}
		return E(KindConflict, CodeContractConflict, "contract conflicts with stored thread (%s)", stored)
	}
	return nil
}

// ConnectionRole is the role a connection acts as on the thread: the one
// it declared, else the principal's only party's (partyOf's rule); "" when
// it declared none and holds none or several, so each write is judged by
// partyOf as any other.
func (t *Thread) ConnectionRole(principalID, declared string) string {
	if declared != "" || principalID == "" {
		return declared
	}
	if mine := t.partiesOf(principalID); len(mine) == 1 {
		return mine[0].Role
	}
	return ""
}

func rolesOf(ps []Party) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = roleName(p.Role)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func roleName(r string) string {
	if r == "" {
		return "(no role)"
	}
	return r
}

// Invitation is a verified invitation token's content.
type Invitation struct {
	ThreadID  string
	Role      string
	Level     AccessLevel
	InvitedBy string
	ExpiresAt time.Time
}

// Invite checks that actor may invite role at level: only owners invite,
// never at owner level, and on contract threads only the contract's parties.
func (t *Thread) Invite(a Actor, role string, level AccessLevel, c *Contract, now time.Time) (Party, error) {
	p, err := t.Authorize(a, ActInvite, now)
	if err != nil {
		return Party{}, err
	}
	if t.Status.Closed() {
		return Party{}, E(KindConflict, CodeThreadClosed, "thread is %s", t.Status)
	}
	if role == "" {
		return Party{}, Invalid("role", "Missing required field: role")
	}
	if !level.AtLeast(AccessObserver) || level == AccessOwner {
		return Party{}, Invalid("accessLevel", "accessLevel must be external, observer or participant")
	}
	if c != nil {
		if err := c.checkParty(role); err != nil {
			return Party{}, err
		}
	}
	return p, nil
}

// Join gives actor a party on the thread and returns it.
//
// With an invitation: the party is the invitation's role at the invitation's
// level (a party the principal already holds at a higher level is kept, never
// lowered); an expired invitation is grant_expired; the grant expires with it.
//
// By thread id (no invitation): a principal re-attaches to a party it already
// holds (same level — joining never raises it); only the owning principal may
// add a new role this way, as participant (one key, several services).
// Anyone else is not_a_party: they need an invitation.
//
// changed reports whether the party is new or different (to be stored).
func (t *Thread) Join(a Actor, inv *Invitation, c *Contract, now time.Time) (p Party, changed bool, err error) {
	if inv != nil {
		if inv.ThreadID != t.ID {
			return Party{}, false, E(KindInvalid, CodeValidationFailed, "the invitation is for another thread")
		}
		if !now.Before(inv.ExpiresAt) {
			return Party{}, false, E(KindForbidden, CodeGrantExpired, "the invitation to thread %s expired at %s",
				t.ID, inv.ExpiresAt.UTC().Format(time.RFC3339))
		}
		if a.Role != "" && a.Role != inv.Role {
			return Party{}, false, Invalid("role", "the invitation is for role %q, not %q", inv.Role, a.Role)
		}
		for _, q := range t.partiesOf(a.PrincipalID) {
			if q.Role == inv.Role && !q.Expired(now) && q.Level.AtLeast(inv.Level) {
				return q, false, nil
			}
		}
		exp := inv.ExpiresAt
		p = Party{PrincipalKind: a.PrincipalKind, PrincipalID: a.PrincipalID, Role: inv.Role, Level: inv.Level,
			GrantedBy: inv.InvitedBy, GrantedAt: now, ExpiresAt: &exp}
		t.setParty(p)
		return p, true, nil
	}
	mine := t.partiesOf(a.PrincipalID)
	if a.Role == "" {
		if len(mine) == 1 {
			if mine[0].Expired(now) {
				_, err := t.Authorize(Actor{PrincipalID: a.PrincipalID}, ActRecordStep, now)
				return Party{}, false, err
			}
			return mine[0], false, nil
		}
		if _, err := t.partyOf(a); err != nil {
			return Party{}, false, err
		}
	}
	for _, q := range mine {
		if q.Role == a.Role {
			if q.Expired(now) {
				_, err := t.Authorize(a, ActRecordStep, now)
				return Party{}, false, err
			}
			return q, false, nil
		}
	}
	if !t.ownedBy(a.PrincipalID) {
		return Party{}, false, E(KindForbidden, CodeNotAParty,
			"joining thread %s by id needs an invitation (only its owner may add a role without one): ask its owner for inviteParty", t.ID)
	}
	if t.Status.Closed() {
		return Party{}, false, E(KindConflict, CodeThreadClosed, "thread is %s", t.Status)
	}
	if c != nil {
		if err := c.checkParty(a.Role); err != nil {
			return Party{}, false, err
		}
	}
	p = Party{PrincipalKind: a.PrincipalKind, PrincipalID: a.PrincipalID, Role: a.Role, Level: AccessParticipant,
		GrantedBy: a.PrincipalID, GrantedAt: now}
	t.setParty(p)
	return p, true, nil
}

// StepAttempt is one step attempt a party reports.
type StepAttempt struct {
	Name           string
	IdempotencyKey string
	InvocationID   string
	// Grant is the status of the waitFor grant InvocationID names ("" when
	// none was given): a cancelled one refuses the attempt.
	Grant      GrantStatus
	Status     StepStatus
	Context    map[string]string
	StartedAt  *time.Time
	FinishedAt *time.Time
	// Snapshots are the contexts of the latest success of each step the
	// step's content references read (ContractStep.ReferencedSteps;
	// LatestSuccessContexts).
	Snapshots map[string]map[string]string
	// FreshConsumed are the prerequisite successes earlier invocations of
	// the step consumed (FreshConsumed); read only for an unguarded report
	// of a step with fresh prerequisites.
	FreshConsumed map[string]bool
}

// StepIdentity is the latest recorded attempt of one step identity (thread,
// step name, idempotency key).
type StepIdentity struct {
	Status       string
	RetryCount   int
	InvocationID string
	LatestStepID string
}

// StepDecision is what the rules decided about an attempt.
type StepDecision struct {
	// Duplicate: nothing is written; the reply names the latest attempt.
	Duplicate bool
	// SameInvocation: the duplicate is a re-sent attempt (same invocation id).
	SameInvocation bool
	Party          Party
	Attempt        int // 1 for the first attempt
	RetryCount     int
	Validation     *ValidationResult
	// Ended is the status this step ended the thread with ("" if it did not).
	Ended ThreadStatus
	// Consume is the grant row an unguarded report of a step with fresh
	// prerequisites writes (its InvocationID left to the caller:
	// ReportInvocationPrefix + the step id) so that no later invocation
	// spends the same approval; nil when it consumes nothing.
	Consume *StepGrant
}

// RecordStep judges one attempt and applies its effect to the thread.
//
// Order: the writer must be a party allowed to record (Authorize); then for
// the same step identity a latest attempt with the same non-empty invocation
// id, or a latest success, makes this a duplicate (nothing written, also on
// a closed thread, so a client retrying after a lost reply gets its answer);
// otherwise an invocation whose waitFor grant was given back is refused
// (invocation_cancelled), a closed thread refuses (thread_closed) and the attempt is
// appended — a retry when the identity exists (retryCount+1).
//
// On a contract thread the attempt is validated with the writer's party role
// as the step's recorder (contract owner checks are judged against that role,
// never against the API key). Then:
//   - a violation of severity critical (invalid_entry_point,
//     invalid_transition, unauthorized_owner, an undocumented step) fails the
//     thread (status failed, Error = the worst violation) whether or not the
//     step is terminal: the record says the contract was broken rather than
//     letting the thread run on;
//   - a succeeded terminal step with a major violation (missing required
//     context, retry limit, timeouts) fails it too; a non-terminal major
//     violation is recorded and notified, and the thread goes on;
//   - otherwise a succeeded terminal step completes it (a member of a
//     group whose members must all succeed: once all of them have).
//
// Before any of that, a step whose context breaks its content rules is
// refused (content_rule_failed): nothing is recorded and the thread stays
// as it was. An unguarded report of a step with fresh prerequisites
// consumes them (Consume), or breaks them (fresh_dependency_required,
// critical) when an earlier invocation used them already.
//
// Free-form threads end only through End.
func (t *Thread) RecordStep(a Actor, c *Contract, in StepAttempt, cur *StepIdentity, history []RecordedStep,
	now time.Time) (StepDecision, error) {
	p, err := t.Authorize(a, ActRecordStep, now)
	if err != nil {
		return StepDecision{}, err
	}
	d := StepDecision{Party: p, Attempt: 1}
	if cur != nil {
		same := in.InvocationID != "" && cur.InvocationID == in.InvocationID
		if same || StepSucceeded(cur.Status) {
			d.Duplicate, d.SameInvocation = true, same
			d.RetryCount, d.Attempt = cur.RetryCount, cur.RetryCount+1
			return d, nil
		}
		d.RetryCount = cur.RetryCount + 1
		d.Attempt = d.RetryCount + 1
	}
	if in.Grant == GrantCancelled {
		return StepDecision{}, errInvocationCancelled(in.InvocationID)
	}
	if t.Status.Closed() {
		return StepDecision{}, E(KindConflict, CodeThreadClosed, "thread is %s", t.Status)
	}
	step, known := ContractStep{}, false
	if c != nil {
		step, known = c.Step(in.Name)
	}
	if known {
		// Refused before anything changes: not recorded, the thread stays
		// as it was (the caller logs the refusal).
		if err := JudgeContent(step, in.Status, in.Context, in.Snapshots); err != nil {
			return StepDecision{}, err
		}
	}
	t.UpdatedAt = now
	if c == nil {
		return d, nil
	}
	si := StepInput{Name: in.Name, Status: string(in.Status), Context: in.Context, Attempt: d.Attempt, Party: p.Role}
	if in.StartedAt != nil {
		si.StartedAt = *in.StartedAt
	}
	if in.FinishedAt != nil {
		si.FinishedAt = *in.FinishedAt
	}
	vr := ValidateStep(*c, ThreadSnapshot{StartedAt: t.CreatedAt, Steps: history, Role: p.Role}, si, now)
	if known && in.Grant != GrantAllowed {
		// A waitFor grant consumed the fresh prerequisites when it was
		// given; an unguarded report consumes them now.
		issue, consume := judgeFresh(step, history, in.FreshConsumed, a.PrincipalID, now)
		if issue != nil {
			vr = NewValidationResult(append(vr.Issues, *issue))
		}
		d.Consume = consume
	}
	d.Validation = &vr
	switch {
	case hasSeverity(vr, SeverityCritical) || vr.FailsThread() && c.IsTerminal(in.Name) && in.Status.Succeeded():
		worst, _ := vr.MostSevere()
		t.Status, t.CompletedAt, t.Error = ThreadFailed, &now, worst.Message
		d.Ended = ThreadFailed
	case vr.CompletesThread(*c, si) && len(c.GroupsPending(in.Name, history)) == 0:
		// A terminal member of a group whose members must all succeed
		// completes the thread with the last of them.
		t.Status, t.CompletedAt = ThreadCompleted, &now
		d.Ended = ThreadCompleted
	}
	return d, nil
}

func hasSeverity(vr ValidationResult, sev Severity) bool {
	for _, is := range vr.Issues {
		if is.Severity == sev {
			return true
		}
	}
	return false
}

// End completes or cancels the thread on actor's request. Ending it again
// with the status it already has changes nothing and succeeds (a retry after
// a lost reply); any other end of a closed thread is thread_closed. A
// contract thread completes only through a succeeded terminal step. reason is
// kept as the cancel reason.
func (t *Thread) End(a Actor, status ThreadStatus, reason string, now time.Time) (changed bool, err error) {
	act := ActCancel
	if status == ThreadCompleted {
		act = ActComplete
	}
	if _, err := t.Authorize(a, act, now); err != nil {
		return false, err
	}
	if t.Status == status {
		return false, nil
	}
	if t.Status.Closed() {
		return false, E(KindConflict, CodeThreadClosed, "thread is already %s", t.Status)
	}
	if status == ThreadCompleted && t.HasContract() {
		return false, E(KindConflict, CodeInvalidStatusTransition,
			"contract thread %s:%d completes when a terminal step succeeds; none has yet", t.ContractName, t.ContractVersion)
	}
	t.Status, t.CompletedAt, t.UpdatedAt = status, &now, now
	if status == ThreadCancelled {
		t.EndReason = reason
	}
	return true, nil
}

// InviteTarget picks the thread an inviteParty without an explicit thread
// means: the connection's only thread. With several it is ambiguous_thread,
// never silently the first.
func InviteTarget(explicit string, held []string) (string, error) {
	switch {
	case explicit != "":
		return explicit, nil
	case len(held) == 1:
		return held[0], nil
	case len(held) == 0:
		return "", Invalid("threadId", "no thread to invite to: start or join a thread first, or pass threadId")
	}
	e := E(KindInvalid, CodeAmbiguousThread,
		"this connection holds %d threads; pass the thread to invite to (inviteParty with threadId)", len(held))
	e.Field = "threadId"
	return "", e
}
