package readmodel

import (
	"context"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// StepReads read the steps of threads: their states, attempts, histories
// and sub-steps.
type StepReads struct{ scope }

// StepSelection filters and pages the steps of a thread.
type StepSelection struct {
	StepName, IdempotencyKey, Status string
	Limit, Offset                    *int // domain.StepsPage; offset default 0
	// FirstOfName keeps the first-seen identity of each step name.
	FirstOfName bool
}

// Steps returns the step states of each thread (at most
// domain.MaxStepsPerThread per thread), in first-seen order.
func (q *StepReads) Steps(ctx context.Context, threadIDs []string, s StepSelection) (map[string][]ports.StepView, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	f := ports.StepFilter{StepName: s.StepName, IdempotencyKey: s.IdempotencyKey, Statuses: StepStatuses(s.Status), FirstOfName: s.FirstOfName}
	if s.Offset != nil && *s.Offset > 0 {
		f.Offset = *s.Offset
	}
	return st.Steps(ctx, domain.ValidIDs(threadIDs), f, domain.StepsPage.Effective(s.Limit))
}

// Attempts returns a page of each thread's attempts in the order they were
// recorded (the waterfall of a thread page).
func (q *StepReads) Attempts(ctx context.Context, threadIDs []string, limit, offset *int) (map[string][]ports.ActivityView, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	off := 0
	if offset != nil && *offset > 0 {
		off = *offset
	}
	return st.Attempts(ctx, domain.ValidIDs(threadIDs), domain.AttemptsPage.Effective(limit), off)
}

// HistoryArgs page and filter step history. Times are ISO-8601 strings.
type HistoryArgs struct {
	Limit, Offset            *int
	StartAt, EndAt           string
	ActivityType, Actor      string
	StepName, IdempotencyKey string // top-level stepHistory only
	ThreadID                 string // top-level stepHistory only
}

func (a HistoryArgs) filter() (ports.HistoryFilter, error) {
	f := ports.HistoryFilter{ActivityType: a.ActivityType, Actor: a.Actor, Limit: domain.HistoryPage.Effective(a.Limit)}
	if a.Offset != nil && *a.Offset > 0 {
		f.Offset = *a.Offset
	}
	var err error
	if f.StartAt, err = ParseTimeArg("startAt", a.StartAt); err != nil {
		return f, err
	}
	if f.EndAt, err = ParseTimeArg("endAt", a.EndAt); err != nil {
		return f, err
	}
	return f, nil
}

// StepHistories returns each step's attempts, newest first.
func (q *StepReads) StepHistories(ctx context.Context, steps []ports.StepKey, a HistoryArgs) (map[ports.StepKey][]ports.ActivityView, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	f, err := a.filter()
	if err != nil {
		return nil, err
	}
	return st.StepHistories(ctx, validStepKeys(steps), f)
}

// StepHistory returns the attempts of one step of a thread, newest first.
// Without an idempotency key every key of the step name is included.
func (q *StepReads) StepHistory(ctx context.Context, a HistoryArgs) ([]ports.ActivityView, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	if a.ThreadID == "" {
		return nil, domain.Invalid("threadId", "threadId is required")
	}
	if a.StepName == "" {
		return nil, domain.Invalid("stepName", "stepName is required")
	}
	if !domain.ValidID(a.ThreadID) {
		return []ports.ActivityView{}, nil
	}
	f, err := a.filter()
	if err != nil {
		return nil, err
	}
	out, err := st.History(ctx, ports.StepKey{ThreadID: a.ThreadID, StepName: a.StepName, IdempotencyKey: a.IdempotencyKey}, f)
	if out == nil && err == nil {
		out = []ports.ActivityView{}
	}
	return out, err
}

// SubSteps returns the sub-steps of each step, over all its attempts.
func (q *StepReads) SubSteps(ctx context.Context, steps []ports.StepKey) (map[ports.StepKey][]ports.SubStepView, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	return st.SubSteps(ctx, validStepKeys(steps))
}

// StepGroups returns each thread's step identities grouped by step name
// (at most domain.MaxStepGroups per thread), in first-seen order.
func (q *StepReads) StepGroups(ctx context.Context, threadIDs []string) (map[string][]ports.StepGroupView, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	return st.StepGroups(ctx, domain.ValidIDs(threadIDs), domain.MaxStepGroups)
}

// StepEdges returns the step orders each thread took (at most
// domain.MaxStepGroups pairs per thread).
func (q *StepReads) StepEdges(ctx context.Context, threadIDs []string) (map[string][]ports.StepEdgeView, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	return st.StepEdges(ctx, domain.ValidIDs(threadIDs), domain.MaxStepGroups)
}

// IssueKeys returns the idempotency key of the step identity holding each
// thread's first issue, by thread id (threads without one are absent).
func (q *StepReads) IssueKeys(ctx context.Context, threads []ports.ThreadView) (map[string]string, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	var refs []ports.IssueRef
	for _, t := range threads {
		if is := t.Health.FirstIssue; is != nil {
			refs = append(refs, ports.IssueRef{ThreadID: t.ID, StepName: is.StepName, Failed: is.Type == domain.IssueStepFailed})
		}
	}
	if len(refs) == 0 {
		return map[string]string{}, nil
	}
	return st.IssueKeys(ctx, refs)
}
