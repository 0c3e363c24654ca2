package readmodel

// The step reads: states, attempts, histories, sub-steps, the outline
// (groups and edges) and the key of a thread's first issue.

import (
	"context"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// StepSelection filters and pages the steps of a thread.
type StepSelection struct {
	StepName, IdempotencyKey, Status string
	Limit, Offset                    *int // domain.StepsPage; offset default 0
	// FirstOfName keeps the first-seen identity of each step name.
	FirstOfName bool
}

// StepReader reads step states.
type StepReader interface {
	// Steps returns at most perThread step states of each thread, ordered by
	// first_seen_at.
	Steps(ctx context.Context, threadIDs []string, f ports.StepFilter, perThread int) (map[string][]ports.StepView, error)
}

// StepsHandler returns the step states of each thread (at most
// domain.MaxStepsPerThread per thread), in first-seen order.
type StepsHandler struct {
	store StepReader
	scope Scope
}

// NewStepsHandler builds the Steps loader.
func NewStepsHandler(store StepReader, scope Scope) StepsHandler {
	return StepsHandler{store: store, scope: scope}
}

// Handle returns the steps s selects of each visible thread.
func (h StepsHandler) Handle(ctx context.Context, threadIDs []string, s StepSelection) (map[string][]ports.StepView, error) {
	v, err := h.scope.open(ctx)
	if err != nil {
		return nil, err
	}
	f := ports.StepFilter{StepName: s.StepName, IdempotencyKey: s.IdempotencyKey, Statuses: StepStatuses(s.Status), FirstOfName: s.FirstOfName}
	if s.Offset != nil && *s.Offset > 0 {
		f.Offset = *s.Offset
	}
	return perThread(ctx, v, domain.ValidIDs(threadIDs), func(ids []string) (map[string][]ports.StepView, error) {
		return h.store.Steps(ctx, ids, f, domain.StepsPage.Effective(s.Limit))
	})
}

// AttemptReader reads attempts in chain order.
type AttemptReader interface {
	// Attempts returns a page of each thread's attempts in chain (seq) order.
	Attempts(ctx context.Context, threadIDs []string, limit, offset int) (map[string][]ports.ActivityView, error)
}

// AttemptsHandler returns a page of each thread's attempts in the order
// they were recorded (the waterfall of a thread page).
type AttemptsHandler struct {
	store AttemptReader
	scope Scope
}

// NewAttemptsHandler builds the Attempts loader.
func NewAttemptsHandler(store AttemptReader, scope Scope) AttemptsHandler {
	return AttemptsHandler{store: store, scope: scope}
}

// Handle returns a page of each visible thread's attempts.
func (h AttemptsHandler) Handle(ctx context.Context, threadIDs []string, limit, offset *int) (map[string][]ports.ActivityView, error) {
	v, err := h.scope.open(ctx)
	if err != nil {
		return nil, err
	}
	off := 0
	if offset != nil && *offset > 0 {
		off = *offset
	}
	return perThread(ctx, v, domain.ValidIDs(threadIDs), func(ids []string) (map[string][]ports.ActivityView, error) {
		return h.store.Attempts(ctx, ids, domain.AttemptsPage.Effective(limit), off)
	})
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
	if f.StartAt, err = domain.ParseTimeArg("startAt", a.StartAt); err != nil {
		return f, err
	}
	if f.EndAt, err = domain.ParseTimeArg("endAt", a.EndAt); err != nil {
		return f, err
	}
	return f, nil
}

// HistoriesReader reads the activities of steps.
type HistoriesReader interface {
	// StepHistories returns the activities of each step, newest first,
	// paged per step.
	StepHistories(ctx context.Context, steps []ports.StepKey, f ports.HistoryFilter) (map[ports.StepKey][]ports.ActivityView, error)
}

// StepHistoriesHandler returns each step's attempts, newest first.
type StepHistoriesHandler struct {
	store HistoriesReader
	scope Scope
}

// NewStepHistoriesHandler builds the StepHistories loader.
func NewStepHistoriesHandler(store HistoriesReader, scope Scope) StepHistoriesHandler {
	return StepHistoriesHandler{store: store, scope: scope}
}

// Handle returns the attempts of each step of a visible thread.
func (h StepHistoriesHandler) Handle(ctx context.Context, steps []ports.StepKey, a HistoryArgs) (map[ports.StepKey][]ports.ActivityView, error) {
	v, err := h.scope.open(ctx)
	if err != nil {
		return nil, err
	}
	f, err := a.filter()
	if err != nil {
		return nil, err
	}
	return perStep(ctx, v, validStepKeys(steps), func(keys []ports.StepKey) (map[ports.StepKey][]ports.ActivityView, error) {
		return h.store.StepHistories(ctx, keys, f)
	})
}

// HistoryReader reads one step's activities.
type HistoryReader interface {
	// History returns one step's activities (every idempotency key when
	// key.IdempotencyKey is empty), newest first.
	History(ctx context.Context, key ports.StepKey, f ports.HistoryFilter) ([]ports.ActivityView, error)
}

// StepHistoryHandler returns the attempts of one step of a thread, newest
// first (the top-level stepHistory).
type StepHistoryHandler struct {
	store HistoryReader
	scope Scope
}

// NewStepHistoryHandler builds the StepHistory query.
func NewStepHistoryHandler(store HistoryReader, scope Scope) StepHistoryHandler {
	return StepHistoryHandler{store: store, scope: scope}
}

// Handle returns the step's attempts; without an idempotency key every key
// of the step name is included.
func (h StepHistoryHandler) Handle(ctx context.Context, a HistoryArgs) ([]ports.ActivityView, error) {
	v, err := h.scope.open(ctx)
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
	out, err := v.history(ctx, h.store, ports.StepKey{ThreadID: a.ThreadID, StepName: a.StepName, IdempotencyKey: a.IdempotencyKey}, f)
	if out == nil && err == nil {
		out = []ports.ActivityView{}
	}
	return out, err
}

// SubStepReader reads the sub-steps of steps.
type SubStepReader interface {
	// SubSteps returns the sub-steps recorded under any attempt of each step.
	SubSteps(ctx context.Context, steps []ports.StepKey) (map[ports.StepKey][]ports.SubStepView, error)
}

// SubStepsHandler returns the sub-steps of each step, over all its attempts.
type SubStepsHandler struct {
	store SubStepReader
	scope Scope
}

// NewSubStepsHandler builds the SubSteps loader.
func NewSubStepsHandler(store SubStepReader, scope Scope) SubStepsHandler {
	return SubStepsHandler{store: store, scope: scope}
}

// Handle returns the sub-steps of each step of a visible thread.
func (h SubStepsHandler) Handle(ctx context.Context, steps []ports.StepKey) (map[ports.StepKey][]ports.SubStepView, error) {
	v, err := h.scope.open(ctx)
	if err != nil {
		return nil, err
	}
	return perStep(ctx, v, validStepKeys(steps), func(keys []ports.StepKey) (map[ports.StepKey][]ports.SubStepView, error) {
		return h.store.SubSteps(ctx, keys)
	})
}

// StepGroupReader reads step identities grouped by name.
type StepGroupReader interface {
	// StepGroups returns each thread's step identities grouped by step
	// name, in first-seen order, at most perThread groups per thread.
	StepGroups(ctx context.Context, threadIDs []string, perThread int) (map[string][]ports.StepGroupView, error)
}

// StepGroupsHandler returns each thread's step identities grouped by step
// name (at most domain.MaxStepGroups per thread), in first-seen order.
type StepGroupsHandler struct {
	store StepGroupReader
	scope Scope
}

// NewStepGroupsHandler builds the StepGroups loader.
func NewStepGroupsHandler(store StepGroupReader, scope Scope) StepGroupsHandler {
	return StepGroupsHandler{store: store, scope: scope}
}

// Handle returns the step groups of each visible thread.
func (h StepGroupsHandler) Handle(ctx context.Context, threadIDs []string) (map[string][]ports.StepGroupView, error) {
	v, err := h.scope.open(ctx)
	if err != nil {
		return nil, err
	}
	return perThread(ctx, v, domain.ValidIDs(threadIDs), func(ids []string) (map[string][]ports.StepGroupView, error) {
		return h.store.StepGroups(ctx, ids, domain.MaxStepGroups)
	})
}

// StepEdgeReader reads the step orders threads took.
type StepEdgeReader interface {
	// StepEdges returns each thread's distinct (previous step, step) pairs,
	// at most perThread per thread.
	StepEdges(ctx context.Context, threadIDs []string, perThread int) (map[string][]ports.StepEdgeView, error)
}

// StepEdgesHandler returns the step orders each thread took (at most
// domain.MaxStepGroups pairs per thread).
type StepEdgesHandler struct {
	store StepEdgeReader
	scope Scope
}

// NewStepEdgesHandler builds the StepEdges loader.
func NewStepEdgesHandler(store StepEdgeReader, scope Scope) StepEdgesHandler {
	return StepEdgesHandler{store: store, scope: scope}
}

// Handle returns the step orders of each visible thread.
func (h StepEdgesHandler) Handle(ctx context.Context, threadIDs []string) (map[string][]ports.StepEdgeView, error) {
	v, err := h.scope.open(ctx)
	if err != nil {
		return nil, err
	}
	return perThread(ctx, v, domain.ValidIDs(threadIDs), func(ids []string) (map[string][]ports.StepEdgeView, error) {
		return h.store.StepEdges(ctx, ids, domain.MaxStepGroups)
	})
}

// IssueKeyReader reads the step identities holding issues.
type IssueKeyReader interface {
	// IssueKeys returns the idempotency key of the step identity holding
	// each asked issue (absent when none is recorded), by thread id.
	IssueKeys(ctx context.Context, refs []ports.IssueRef) (map[string]string, error)
}

// IssueKeysHandler returns the idempotency key of the step identity holding
// each thread's first issue, by thread id (threads without one are absent).
type IssueKeysHandler struct {
	store IssueKeyReader
	scope Scope
}

// NewIssueKeysHandler builds the IssueKeys loader.
func NewIssueKeysHandler(store IssueKeyReader, scope Scope) IssueKeysHandler {
	return IssueKeysHandler{store: store, scope: scope}
}

// Handle returns the issue keys of the visible threads among threads.
func (h IssueKeysHandler) Handle(ctx context.Context, threads []ports.ThreadView) (map[string]string, error) {
	v, err := h.scope.open(ctx)
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
	if v.party != nil {
		ids := make([]string, len(refs))
		for i, r := range refs {
			ids[i] = r.ThreadID
		}
		ok, err := v.visible(ctx, ids)
		if err != nil || len(ok) == 0 {
			return map[string]string{}, err
		}
		set := idSet(ok)
		var keep []ports.IssueRef
		for _, r := range refs {
			if set[r.ThreadID] {
				keep = append(keep, r)
			}
		}
		refs = keep
	}
	return h.store.IssueKeys(ctx, refs)
}
