package threads

// The RecordStep command: appends one step attempt (WebSocket
// recordThreadEvent, OTLP spans).

import (
	"context"
	"errors"
	"time"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// RecordStepHandler appends one step attempt; one of the Commands.
type RecordStepHandler struct {
	semantic  semanticGate // semantic rules, judged before the append (semantic_gate.go)
	steps     ports.StepAppender
	contracts *contractCache
	keys      domain.ChainKeys
	publisher ports.NotificationPublisher
	clock     ports.Clock
	metrics   ports.ThreadMetrics
	refusals  refusals
}

// NewRecordStepHandler builds RecordStep: keys sign the hash chain; the
// publisher (the hub) hears of the notifications each append commits.
func NewRecordStepHandler(steps ports.StepAppender, contracts *contractCache, keys domain.ChainKeys,
	publisher ports.NotificationPublisher, clock ports.Clock, metrics ports.ThreadMetrics, refused refusals) RecordStepHandler {
	return RecordStepHandler{steps: steps, contracts: contracts, keys: keys, publisher: publisher, clock: clock, metrics: metrics,
		refusals: refused}
}

// Handle appends one attempt. The rules (who may write, duplicate or
// retry, closed threads, contract judgement, completion and failure) are
// domain.Thread.RecordStep's, run inside the store's transaction with the
// thread locked; this builds what is written: activity, hash chain link,
// step state, sub-steps, validation, refs and notifications.
// The reply may be sent once this returns: the transaction has committed.
func (h RecordStepHandler) Handle(ctx context.Context, in RecordStepInput) (StepResult, error) {
	p, err := authz.Require(ctx, domain.PermThreadsWrite)
	if err != nil {
		return StepResult{}, err
	}
	status, subs, err := checkStepInput(in)
	if err != nil {
		return StepResult{}, err
	}
	c, err := h.contracts.ThreadContract(ctx, in.ThreadID)
	if err != nil {
		return StepResult{}, err
	}
	now := now(h.clock)
	who := authz.Actor(p, in.Role)
	// The semantic verdict is taken outside the row lock; the append checks
	// it still holds and, when the thread moved under it, judges again
	// (semantic_gate.go).
	for judgements := 1; ; judgements++ {
		res, plan, err := h.judgeAndAppend(ctx, c, who, p.ID, in, status, subs, now)
		if errors.Is(err, errSemanticStale) {
			if judgements < maxSemanticJudgements {
				continue
			}
			err = errSemanticBasisMoved(in.StepName)
		}
		if err != nil {
			if refused(err) {
				h.refusals.record(ctx, c, in, p.ID, err)
			}
			return StepResult{}, err
		}
		if !plan.Duplicate {
			countStep(h.metrics, plan)
			h.publisher.Published(ctx, plan.Notifications)
		}
		return res, nil
	}
}

// judgeAndAppend judges the submission's semantic rules, then appends it
// under the row lock (errSemanticStale: the verdict no longer holds there).
func (h RecordStepHandler) judgeAndAppend(ctx context.Context, c *domain.Contract, who domain.Actor, principalID string,
	in RecordStepInput, status domain.StepStatus, subs []domain.StepStatus, now time.Time) (StepResult, ports.StepPlan, error) {
	verdict, err := h.semantic.judge(ctx, c, who, in, status)
	if err != nil {
		return StepResult{}, ports.StepPlan{}, err
	}
	attempt := domain.StepAttempt{Name: in.StepName, IdempotencyKey: in.IdempotencyKey, InvocationID: in.InvocationID,
		Status: status, Context: in.Context, StartedAt: in.StartedAt, FinishedAt: in.FinishedAt}
	var res StepResult
	var step domain.ContractStep
	if c != nil {
		step, _ = c.Step(in.StepName)
	}
	writer := ports.AppendWriter{PrincipalID: principalID, Role: in.Role, InvocationID: in.InvocationID,
		WithGrants: len(step.FreshDependsOn) > 0}
	plan, err := h.steps.AppendStep(ctx, in.ThreadID, writer, in.StepName,
		in.IdempotencyKey, c != nil, func(v ports.StepTx) (ports.StepPlan, error) {
			th := v.Thread
			var cur *domain.StepIdentity
			if v.Current != nil {
				cur = &domain.StepIdentity{Status: v.Current.Status, RetryCount: v.Current.RetryCount,
					InvocationID: v.Current.InvocationID, LatestStepID: v.Current.LatestStepID}
			}
			attempt.Grant = v.Grant
			history := ports.Recorded(v.States)
			if refs := step.ReferencedSteps(); len(refs) > 0 {
				attempt.Snapshots = domain.LatestSuccessContexts(refs, history, ports.Contexts(v.States))
			}
			if writer.WithGrants {
				attempt.FreshConsumed = domain.FreshConsumed(v.Grants, in.StepName)
			}
			d, err := th.RecordStep(who, c, attempt, cur, history, now)
			if err != nil {
				return ports.StepPlan{}, err
			}
			if !d.Duplicate && !verdict.holds(c, step, th, v.States) {
				return ports.StepPlan{}, errSemanticStale
			}
			if d.Duplicate {
				res = StepResult{Duplicate: true, SameInvocation: d.SameInvocation, StepID: v.Current.LatestStepID,
					StepName: in.StepName, IdempotencyKey: in.IdempotencyKey, Status: v.Current.Status,
					Attempt: d.Attempt, RetryCount: d.RetryCount, Role: d.Party.Role, ThreadStatus: th.Status}
				return ports.StepPlan{Duplicate: true}, nil
			}
			plan := stepPlan(h.keys, th, v, c, in, status, subs, d, now)
			if g := d.Consume; g != nil {
				g.InvocationID = domain.ReportInvocationPrefix + plan.Activity.ID
				plan.Grant = g
			}
			res = StepResult{StepID: plan.Activity.ID, StepName: in.StepName, IdempotencyKey: in.IdempotencyKey,
				Status: in.Status, Attempt: d.Attempt, RetryCount: d.RetryCount, Role: d.Party.Role,
				ThreadStatus: plan.Thread.Status, Validation: d.Validation}
			return plan, nil
		})
	return res, plan, err
}
