package domain

import "time"

// StepPermission is the answer to "may actor run this step now?" (the
// waitFor action): Allowed, Denied for good (with the reason), or neither
// while a predecessor may still be recorded.
type StepPermission struct {
	Allowed bool
	Denied  bool
	Message string
	Code    Code // set on some denials (invocation_cancelled)
	Issues  []ValidationIssue
	// Grant is what to store when Allowed and New: the permission, with the
	// predecessor success it consumes.
	Grant StepGrant
	New   bool
}

// PermitStep judges, without recording anything, whether actor may record a
// successful stepName under invocationID on the thread now, by the rules
// RecordStep applies: a caller who may not write, or a closed thread, is
// denied; on a contract thread a step outside the contract or owned by
// another party is denied, and a step whose entry point, transition or
// prerequisite is not met yet waits (a predecessor may still be recorded).
// A free-form thread allows every step.
//
// grants are the thread's grants so far. A fresh predecessor success is
// consumed by the grant it enables: the latest success that makes stepName a
// valid transition enables one grant only, so a second waiter (for this or
// any other step) waits for the next success. An invocation already granted
// is allowed again (nothing more consumed); one given back is denied
// (invocation_cancelled); an id granted for another step is denied.
func (t *Thread) PermitStep(a Actor, c *Contract, stepName, invocationID string, history []RecordedStep, grants []StepGrant,
	now time.Time) StepPermission {
	p, err := t.Authorize(a, ActRecordStep, now)
	if err != nil {
		return StepPermission{Denied: true, Message: err.Error(), Code: CodeOf(err)}
	}
	if t.Status.Closed() {
		return StepPermission{Denied: true, Message: "thread is closed (" + string(t.Status) + ")", Code: CodeThreadClosed}
	}
	if g := grantOf(grants, invocationID); g != nil {
		switch {
		case g.Status == GrantCancelled:
			return StepPermission{Denied: true, Message: errInvocationCancelled(invocationID).Message, Code: CodeInvocationCancelled}
		case g.StepName != stepName:
			return StepPermission{Denied: true, Code: CodeValidationFailed,
				Message: "invocationId " + invocationID + " was granted for step " + g.StepName}
		}
		return StepPermission{Allowed: true, Grant: *g}
	}
	grant := StepGrant{InvocationID: invocationID, StepName: stepName, PrincipalID: a.PrincipalID, Status: GrantAllowed, GrantedAt: now}
	if c == nil {
		return StepPermission{Allowed: true, Grant: grant, New: true}
	}
	vr := ValidateStep(*c, ThreadSnapshot{StartedAt: t.CreatedAt, Steps: history, Role: p.Role},
		StepInput{Name: stepName, Status: string(StepStatusSuccess), Party: p.Role, Attempt: 1, Context: map[string]string{}}, now)
	waiting := false
	for _, is := range vr.Issues {
		switch is.Rule {
		case RuleUndocumentedStep, RuleOwner:
			return StepPermission{Denied: true, Message: is.Message, Issues: []ValidationIssue{is}}
		case RuleEntryPoints, RuleTransitions, RuleDependsOn:
			waiting = true
		}
	}
	if waiting {
		return StepPermission{}
	}
	if step, ok := c.Step(stepName); ok && len(step.FreshDependsOn) > 0 {
		// One fresh approval allows one invocation: a stale one waits for
		// the next success, a fresh one is consumed by this grant (under
		// the thread's row lock, so no other waiter can spend it).
		pc := CheckPrerequisites(step, history, FreshConsumed(grants, stepName))
		if !pc.Satisfied() {
			return StepPermission{}
		}
		grant.FreshConsumed = pc.Consume
	}
	// Only a transition rule makes the latest success what enables the
	// step; a contract without them (FreeOrder) consumes nothing here.
	if prev, ok := lastSuccess(history); ok && prev.ID != "" && !c.FreeOrder {
		if consumed(grants, prev.ID, history) {
			return StepPermission{} // that success enabled another grant: wait for the next one
		}
		grant.Consumed = prev.ID
	}
	return StepPermission{Allowed: true, Grant: grant, New: true}
}
