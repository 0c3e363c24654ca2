package graphqlapi

import (
	"context"
	"fmt"

	"github.com/threadengine/engine/app/insights"
	"github.com/threadengine/engine/app/readmodel"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// SetActors enables resolveActors (nil leaves it answering not found).
func (h *Handler) SetActors(a *readmodel.Actors) { h.actors = a }

type healthResolver struct {
	h      domain.ThreadHealth
	status domain.HealthStatus
	thread *threadResolver // whose health it is (nil: no step lookups)
}

func (r *healthResolver) Status() string     { return string(r.status) }
func (r *healthResolver) FailedSteps() int32 { return int32(r.h.FailedSteps) }
func (r *healthResolver) Critical() int32    { return int32(r.h.Critical) }
func (r *healthResolver) Major() int32       { return int32(r.h.Major) }
func (r *healthResolver) Warnings() int32    { return int32(r.h.Warnings) }
func (r *healthResolver) FirstIssue() *issueSummaryResolver {
	if r.h.FirstIssue == nil {
		return nil
	}
	return &issueSummaryResolver{i: *r.h.FirstIssue, thread: r.thread}
}

type issueSummaryResolver struct {
	i      domain.HealthIssue
	thread *threadResolver
}

// IdempotencyKey names the step identity of the issue: a thread repeating a
// step (pick_item × 58) needs it to link to the attempt that failed. One
// statement per kind of issue for every thread of the list.
func (r *issueSummaryResolver) IdempotencyKey(ctx context.Context) (*string, error) {
	if r.thread == nil {
		return nil, nil
	}
	g := r.thread.g
	m, err := g.issueKeys.get(func() (map[string]string, error) { return g.reads.IssueKeys.Handle(ctx, g.threads) })
	if err != nil {
		return nil, err
	}
	k, ok := m[r.thread.t.ID]
	if !ok {
		return nil, nil
	}
	return &k, nil
}

func (r *issueSummaryResolver) StepName() string  { return r.i.StepName }
func (r *issueSummaryResolver) Type() string      { return r.i.Type }
func (r *issueSummaryResolver) Message() string   { return r.i.Message }
func (r *issueSummaryResolver) Severity() *string { return strPtr(string(r.i.Severity)) }

// Health is read from the thread row. Rows not yet backfilled read as OK.
func (r *threadResolver) Health() *healthResolver {
	st := r.t.HealthStatus
	if st == "" {
		st = r.t.Health.Status(r.t.Status)
	}
	return &healthResolver{h: r.t.Health, status: st, thread: r}
}

func (r *threadResolver) DurationMs() float64 { return float64(r.t.DurationMs) }
func (r *threadResolver) Tags() []string {
	if r.t.Tags == nil {
		return []string{}
	}
	return r.t.Tags
}
func (r *threadResolver) AttemptCount() int32 { return int32(r.t.StepCount) }

func (r *threadResolver) counts(ctx context.Context) (ports.ThreadCounts, error) {
	m, err := r.g.sizes.get(func() (map[string]ports.ThreadCounts, error) { return r.g.reads.Counts.Handle(ctx, r.g.ids) })
	return m[r.t.ID], err
}

func (r *threadResolver) StepCount(ctx context.Context) (int32, error) {
	c, err := r.counts(ctx)
	return int32(c.Steps), err
}

func (r *threadResolver) ValidationCount(ctx context.Context) (int32, error) {
	c, err := r.counts(ctx)
	return int32(c.Validations), err
}

func (r *threadResolver) LinkedFrom(ctx context.Context) ([]*threadResolver, error) {
	m, err := r.g.linked.get(func() (map[string][]ports.ThreadView, error) { return r.g.reads.LinkedFrom.Handle(ctx, r.g.ids) })
	if err != nil {
		return nil, err
	}
	list := m[r.t.ID]
	return newThreadGroup(r.g.reads, list).resolvers(list), nil
}

func (r *hashStatusResolver) BrokenStepID() *string         { return strPtr(r.st.BrokenStepID) }
func (r *hashStatusResolver) BrokenStepName() *string       { return strPtr(r.st.BrokenStepName) }
func (r *hashStatusResolver) BrokenIdempotencyKey() *string { return strPtr(r.st.BrokenIdempotencyKey) }

type stepIntegrityResolver struct{ s readmodel.StepIntegrity }

func (r *stepIntegrityResolver) Verified() bool    { return r.s.Verified }
func (r *stepIntegrityResolver) Hash() *string     { return strPtr(r.s.Hash) }
func (r *stepIntegrityResolver) PrevHash() *string { return strPtr(r.s.PrevHash) }
func (r *stepIntegrityResolver) Error() *string    { return strPtr(r.s.Error) }

func (r *queryResolver) VerifyStepIntegrity(ctx context.Context, a struct{ ThreadID, StepName, IdempotencyKey string }) (*stepIntegrityResolver, error) {
	s, err := r.h.queries.VerifyStep.Handle(ctx, a.ThreadID, a.StepName, a.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	return &stepIntegrityResolver{s}, nil
}

type actorResolver struct{ a readmodel.Actor }

func (r *actorResolver) ID() string           { return r.a.ID }
func (r *actorResolver) Name() string         { return r.a.Name }
func (r *actorResolver) Type() string         { return string(r.a.Type) }
func (r *actorResolver) CompanyName() *string { return strPtr(CompanyName) }

func (r *queryResolver) ResolveActors(ctx context.Context, a struct{ IDs []string }) ([]*actorResolver, error) {
	if r.h.actors == nil {
		return nil, domain.NotFound("resolveActors")
	}
	res, err := r.h.actors.ResolveActors(ctx, a.IDs)
	if err != nil {
		return nil, err
	}
	out := make([]*actorResolver, len(res.Actors))
	for i := range res.Actors {
		out[i] = &actorResolver{res.Actors[i]}
	}
	return out, nil
}

// healthArgs converts the threads query's health filter.
func healthArgs(in *[]string) ([]domain.HealthStatus, error) {
	if in == nil {
		return nil, nil
	}
	out := make([]domain.HealthStatus, 0, len(*in))
	for _, s := range *in {
		h, err := domain.ParseHealthStatus(s)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

func (r *threadResolver) Attempts(ctx context.Context, a struct{ Limit, Offset *int32 }) ([]*historyResolver, error) {
	limit, offset := i32(a.Limit), i32(a.Offset)
	key := fmt.Sprintf("%d|%d", deref32(limit), deref32(offset))
	m, err := r.g.tries.get(key, func() (map[string][]ports.ActivityView, error) {
		return r.g.reads.Attempts.Handle(ctx, r.g.ids, limit, offset)
	})
	if err != nil {
		return nil, err
	}
	return histories(m[r.t.ID]), nil
}

func (r *stepResolver) LatestValidation(ctx context.Context) (*validationResolver, error) {
	g := r.g
	m, err := g.latest.get(func() (map[ports.StepKey]ports.ValidationView, error) {
		return g.reads.LatestValidations.Handle(ctx, g.keys)
	})
	if err != nil {
		return nil, err
	}
	v, ok := m[r.s.StepKey]
	if !ok {
		return nil, nil
	}
	return &validationResolver{v: v}, nil
}

func (r *historyResolver) StepID() *string         { return strPtr(r.a.ID) }
func (r *historyResolver) StepName() *string       { return strPtr(r.a.StepName) }
func (r *historyResolver) IdempotencyKey() *string { return strPtr(r.a.IdempotencyKey) }

type contractStatsResolver struct{ s ports.ContractStat }

func (r *contractStatsResolver) Name() string        { return r.s.Name }
func (r *contractStatsResolver) Version() int32      { return int32(r.s.Version) }
func (r *contractStatsResolver) Threads() int32      { return int32(r.s.Threads) }
func (r *contractStatsResolver) Active() int32       { return int32(r.s.Active) }
func (r *contractStatsResolver) Completed() int32    { return int32(r.s.Completed) }
func (r *contractStatsResolver) Failed() int32       { return int32(r.s.Failed) }
func (r *contractStatsResolver) Cancelled() int32    { return int32(r.s.Cancelled) }
func (r *contractStatsResolver) Violated() int32     { return int32(r.s.Violated) }
func (r *contractStatsResolver) HealthFailed() int32 { return int32(r.s.HealthFailed) }
func (r *contractStatsResolver) Warnings() int32     { return int32(r.s.Warn) }

func (r *queryResolver) ContractStats(ctx context.Context) ([]*contractStatsResolver, error) {
	l, err := r.h.queries.ContractStats.Handle(ctx)
	if err != nil {
		return nil, err
	}
	if len(l) > 100 {
		l = l[:100]
	}
	out := make([]*contractStatsResolver, len(l))
	for i := range l {
		out[i] = &contractStatsResolver{l[i]}
	}
	return out, nil
}

type stepStatsResolver struct{ s ports.StepStat }

func (r *stepStatsResolver) StepName() string { return r.s.StepName }
func (r *stepStatsResolver) Attempts() int32  { return int32(r.s.Attempts) }
func (r *stepStatsResolver) Failed() int32    { return int32(r.s.Failed) }
func (r *stepStatsResolver) Violated() int32  { return int32(r.s.Violated) }
func (r *stepStatsResolver) Warnings() int32  { return int32(r.s.Warnings) }

func stepStats(l []ports.StepStat) []*stepStatsResolver {
	out := make([]*stepStatsResolver, len(l))
	for i := range l {
		out[i] = &stepStatsResolver{l[i]}
	}
	return out
}

func (r *queryResolver) StepStats(ctx context.Context, a struct {
	ContractName    string
	ContractVersion *int32
}) ([]*stepStatsResolver, error) {
	v := 0
	if a.ContractVersion != nil {
		v = int(*a.ContractVersion)
	}
	l, err := r.h.queries.StepStats.Handle(ctx, a.ContractName, v)
	if err != nil {
		return nil, err
	}
	return stepStats(l), nil
}

type overviewResolver struct{ o insights.Overview }

func (r *overviewResolver) Steps() []*stepStatsResolver { return stepStats(r.o.Steps) }
func (r *overviewResolver) Hours() []*hourResolver {
	out := make([]*hourResolver, len(r.o.Hours))
	for i := range r.o.Hours {
		out[i] = &hourResolver{r.o.Hours[i]}
	}
	return out
}

type hourResolver struct{ b ports.HourBucket }

func (r *hourResolver) Start() string    { return rfc3339(r.b.Start) }
func (r *hourResolver) Started() int32   { return int32(r.b.Started) }
func (r *hourResolver) Completed() int32 { return int32(r.b.Completed) }
func (r *hourResolver) Failed() int32    { return int32(r.b.Failed) }

func (r *queryResolver) Overview(ctx context.Context, a struct{ Hours, Limit *int32 }) (*overviewResolver, error) {
	o, err := r.h.queries.Overview.Handle(ctx, i32(a.Hours), i32(a.Limit))
	if err != nil {
		return nil, err
	}
	return &overviewResolver{o}, nil
}
