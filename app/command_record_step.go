package app

// The RecordStep command: appends one step attempt (WebSocket
// recordThreadEvent, OTLP spans).

import (
	"context"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// RecordStepHandler appends one step attempt; one of Threads' Commands.
type RecordStepHandler struct{ t *Threads }

// Handle appends one attempt. The rules (who may write, duplicate or
// retry, closed threads, contract judgement, completion and failure) are
// domain.Thread.RecordStep's, run inside the store's transaction with the
// thread locked; this builds what is written: activity, hash chain link,
// step state, sub-steps, validation, refs and notifications.
// The reply may be sent once this returns: the transaction has committed.
func (h RecordStepHandler) Handle(ctx context.Context, in RecordStepInput) (StepResult, error) {
	t := h.t
	p, err := Require(ctx, domain.PermThreadsWrite)
	if err != nil {
		return StepResult{}, err
	}
	status, subs, err := checkStepInput(in)
	if err != nil {
		return StepResult{}, err
	}
	c, err := t.threadContract(ctx, in.ThreadID)
	if err != nil {
		return StepResult{}, err
	}
	now := t.now()
	who := actor(p, in.Role)
	attempt := domain.StepAttempt{Name: in.StepName, IdempotencyKey: in.IdempotencyKey, InvocationID: in.InvocationID,
		Status: status, Context: in.Context, StartedAt: in.StartedAt, FinishedAt: in.FinishedAt}
	var res StepResult
	plan, err := t.store.AppendStep(ctx, in.ThreadID, ports.AppendWriter{PrincipalID: p.ID, Role: in.Role, InvocationID: in.InvocationID}, in.StepName,
		in.IdempotencyKey, c != nil, func(v ports.StepTx) (ports.StepPlan, error) {
			th := v.Thread
			var cur *domain.StepIdentity
			if v.Current != nil {
				cur = &domain.StepIdentity{Status: v.Current.Status, RetryCount: v.Current.RetryCount,
					InvocationID: v.Current.InvocationID, LatestStepID: v.Current.LatestStepID}
			}
			attempt.Grant = v.Grant
			d, err := th.RecordStep(who, c, attempt, cur, ports.Recorded(v.States), now)
			if err != nil {
				return ports.StepPlan{}, err
			}
			if d.Duplicate {
				res = StepResult{Duplicate: true, SameInvocation: d.SameInvocation, StepID: v.Current.LatestStepID,
					StepName: in.StepName, IdempotencyKey: in.IdempotencyKey, Status: v.Current.Status,
					Attempt: d.Attempt, RetryCount: d.RetryCount, Role: d.Party.Role, ThreadStatus: th.Status}
				return ports.StepPlan{Duplicate: true}, nil
			}
			plan := t.stepPlan(th, v, c, in, status, subs, d, now)
			res = StepResult{StepID: plan.Activity.ID, StepName: in.StepName, IdempotencyKey: in.IdempotencyKey,
				Status: in.Status, Attempt: d.Attempt, RetryCount: d.RetryCount, Role: d.Party.Role,
				ThreadStatus: plan.Thread.Status, Validation: d.Validation}
			return plan, nil
		})
	if err != nil {
		return StepResult{}, err
	}
	if !plan.Duplicate {
		t.countStep(plan)
		t.publisher.Published(plan.Notifications)
	}
	return res, nil
}
