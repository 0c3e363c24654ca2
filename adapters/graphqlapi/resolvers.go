package graphqlapi

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	graphql "github.com/graph-gophers/graphql-go"

	"github.com/threadengine/engine/app/readmodel"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// JSON is the JSON scalar: already-encoded JSON text, returned to clients as
// a JSON string (the SDKs JSON.parse it), e.g. "{\"orderId\":\"O-1\"}".
type JSON string

// ImplementsGraphQLType binds JSON to the schema's JSON scalar.
func (JSON) ImplementsGraphQLType(name string) bool { return name == "JSON" }

// UnmarshalGraphQL accepts any input value and keeps its JSON encoding.
func (j *JSON) UnmarshalGraphQL(input any) error {
	b, err := json.Marshal(input)
	if err != nil {
		return err
	}
	*j = JSON(b)
	return nil
}

// MarshalJSON writes the JSON text as a string.
func (j JSON) MarshalJSON() ([]byte, error) { return json.Marshal(string(j)) }

func jsonPtr(s string) *JSON {
	j := JSON(s)
	return &j
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func timePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := rfc3339(*t)
	return &s
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// idPtr is an optional ID: nil when empty.
func idPtr(s string) *graphql.ID {
	if s == "" {
		return nil
	}
	id := graphql.ID(s)
	return &id
}

func i32(p *int32) *int {
	if p == nil {
		return nil
	}
	n := int(*p)
	return &n
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// queryResolver is the Query root.
type queryResolver struct{ h *Handler }

// Thread is the ThreadDetail query (app/readmodel; MCP's get_thread too) on
// the row read while pricing: it reads the argument-free parts the client
// selected, and the thread's group serves them to the field resolvers; the
// parts with arguments load through the group, as a list's do.
func (r *queryResolver) Thread(ctx context.Context, args struct{ ID graphql.ID }) (*threadResolver, error) {
	t, err, ok := prefetchedThread(ctx, args.ID)
	if !ok {
		r.h.miss(ctx)
		t, err = r.h.queries.Thread.Handle(ctx, string(args.ID))
	}
	if err != nil || t == nil {
		return nil, err
	}
	counts := graphql.HasSelectedField(ctx, "notificationSummary")
	d, err := r.h.queries.Detail.Handle(ctx, readmodel.ThreadDetailArgs{Located: t,
		Parts: readmodel.DetailParts{NotificationCounts: counts}})
	if err != nil {
		return nil, err
	}
	g := newThreadGroup(r.h.threadReads, []ports.ThreadView{d.Thread})
	if counts {
		_, _ = g.counts.get(func() (map[string]ports.NotificationCounts, error) {
			return map[string]ports.NotificationCounts{d.Thread.ID: d.NotificationCounts}, nil
		})
	}
	return g.resolvers([]ports.ThreadView{d.Thread})[0], nil
}

type threadsArgs struct {
	Actor, ContractName                                                  *string
	ContractVersion                                                      *int32
	Status, StartedAfter, StartedBefore, CompletedAfter, CompletedBefore *string
	Health                                                               *[]string
	Tag, IDPrefix, RefKey, RefValue, OrderBy, Order                      *string
	Rule, Step                                                           *string
	Limit, Offset                                                        *int32
	After, Before                                                        *string
}

// search builds the search the resolver runs (pricing decodes the same
// arguments through it, so a filter added here is priced too).
func (a threadsArgs) search() (readmodel.ThreadSearch, error) {
	health, err := healthArgs(a.Health)
	if err != nil {
		return readmodel.ThreadSearch{}, err
	}
	return readmodel.ThreadSearch{Actor: deref(a.Actor), ContractName: deref(a.ContractName),
		ContractVersion: i32(a.ContractVersion), Status: deref(a.Status), StartedAfter: deref(a.StartedAfter),
		StartedBefore: deref(a.StartedBefore), CompletedAfter: deref(a.CompletedAfter),
		CompletedBefore: deref(a.CompletedBefore), Health: health, Tag: deref(a.Tag), IDPrefix: deref(a.IDPrefix),
		RefKey: deref(a.RefKey), RefValue: deref(a.RefValue), OrderBy: deref(a.OrderBy), Ascending: deref(a.Order) == "ASC",
		IssueType: deref(a.Rule), IssueStep: deref(a.Step), Limit: i32(a.Limit), Offset: i32(a.Offset), After: deref(a.After), Before: deref(a.Before)}, nil
}

func (r *queryResolver) Threads(ctx context.Context, a threadsArgs) (*connectionResolver, error) {
	s, err := a.search()
	if err != nil {
		return nil, err
	}
	return r.search(ctx, s)
}

type byContractArgs struct {
	ContractName                               string
	ContractVersion                            *int32
	Actor, Status, StartedAfter, StartedBefore *string
	Limit, Offset                              *int32
	After, Before                              *string
}

func (a byContractArgs) search() (readmodel.ThreadSearch, error) {
	if a.ContractName == "" {
		return readmodel.ThreadSearch{}, domain.Invalid("contractName", "contractName is required")
	}
	return readmodel.ThreadSearch{ContractName: a.ContractName, ContractVersion: i32(a.ContractVersion),
		Actor: deref(a.Actor), Status: deref(a.Status), StartedAfter: deref(a.StartedAfter),
		StartedBefore: deref(a.StartedBefore), Limit: i32(a.Limit), Offset: i32(a.Offset),
		After: deref(a.After), Before: deref(a.Before)}, nil
}

func (r *queryResolver) ThreadsByContract(ctx context.Context, a byContractArgs) (*connectionResolver, error) {
	s, err := a.search()
	if err != nil {
		return nil, err
	}
	return r.search(ctx, s)
}

type byRefArgs struct {
	RefKey                              *string
	RefValue                            string
	Status, StartedAfter, StartedBefore *string
	Limit, Offset                       *int32
	After, Before                       *string
}

func (a byRefArgs) search() (readmodel.ThreadSearch, error) {
	if a.RefValue == "" {
		return readmodel.ThreadSearch{}, domain.Invalid("refValue", "refValue is required")
	}
	return readmodel.ThreadSearch{RefKey: deref(a.RefKey), RefValue: a.RefValue, Status: deref(a.Status),
		StartedAfter: deref(a.StartedAfter), StartedBefore: deref(a.StartedBefore), Limit: i32(a.Limit), Offset: i32(a.Offset),
		After: deref(a.After), Before: deref(a.Before)}, nil
}

func (r *queryResolver) ThreadsByRef(ctx context.Context, a byRefArgs) (*connectionResolver, error) {
	s, err := a.search()
	if err != nil {
		return nil, err
	}
	return r.search(ctx, s)
}

func (r *queryResolver) search(ctx context.Context, s readmodel.ThreadSearch) (*connectionResolver, error) {
	var page readmodel.ThreadPage
	var err error
	if pr, ok := r.h.prefetchedPage(ctx, s); ok {
		page, err = pr.page, pr.err
	} else {
		page, err = r.h.queries.Search.Handle(ctx, s)
	}
	if err != nil {
		return nil, err
	}
	g := newThreadGroup(r.h.threadReads, page.Threads)
	return &connectionResolver{threads: g.resolvers(page.Threads), page: page, search: s, h: r.h}, nil
}

func (r *queryResolver) ThreadChain(ctx context.Context, a struct {
	RootID   graphql.ID
	MaxDepth *int32
}) ([]*threadResolver, error) {
	var list []ports.ThreadView
	var err error
	if cr, ok := r.h.prefetchedChain(ctx, string(a.RootID), a.MaxDepth); ok {
		list, err = cr.threads, cr.err
	} else {
		var m map[string][]ports.ThreadView
		m, err = r.h.queries.Chains.Handle(ctx, []string{string(a.RootID)}, i32(a.MaxDepth))
		list = m[string(a.RootID)]
	}
	if err != nil {
		return nil, err
	}
	return newThreadGroup(r.h.threadReads, list).resolvers(list), nil
}

type stepHistoryArgs struct {
	ThreadID, StepName                  string
	IdempotencyKey                      *string
	Limit, Offset                       *int32
	StartAt, EndAt, ActivityType, Actor *string
}

func (r *queryResolver) StepHistory(ctx context.Context, a stepHistoryArgs) ([]*historyResolver, error) {
	acts, err := r.h.queries.StepHistory.Handle(ctx, readmodel.HistoryArgs{ThreadID: a.ThreadID, StepName: a.StepName,
		IdempotencyKey: deref(a.IdempotencyKey), Limit: i32(a.Limit), Offset: i32(a.Offset), StartAt: deref(a.StartAt),
		EndAt: deref(a.EndAt), ActivityType: deref(a.ActivityType), Actor: deref(a.Actor)})
	if err != nil {
		return nil, err
	}
	return histories(acts), nil
}

func (r *queryResolver) ValidationResults(ctx context.Context, a struct {
	ThreadID, StepName, IdempotencyKey string
	Limit                              *int32
}) ([]*validationResolver, error) {
	vs, err := r.h.queries.ValidationResults.Handle(ctx, a.ThreadID, readmodel.ValidationArgs{StepName: a.StepName,
		IdempotencyKey: a.IdempotencyKey, Limit: i32(a.Limit)})
	if err != nil {
		return nil, err
	}
	return validations(vs), nil
}

func (r *queryResolver) ContractGraph(ctx context.Context, a struct {
	Name    string
	Version *int32
}) (*contractGraphResolver, error) {
	v := 0
	if a.Version != nil {
		v = int(*a.Version)
	}
	c, err := r.h.queries.Contract.Handle(ctx, a.Name, v)
	if err != nil {
		return nil, err
	}
	return &contractGraphResolver{c: c}, nil
}

// VerifyThreadIntegrity verifies one thread's chain, priced by its step
// count (read while pricing) and taken from the request's verification budget.
func (r *queryResolver) VerifyThreadIntegrity(ctx context.Context, a struct{ ThreadID string }) (*hashStatusResolver, error) {
	t, err, ok := prefetchedThread(ctx, graphql.ID(a.ThreadID))
	if !ok {
		r.h.miss(ctx)
		t, err = r.h.queries.Thread.Handle(ctx, a.ThreadID)
	}
	if err != nil {
		return nil, err
	}
	if t == nil {
		// Gone: the transparency log may show it was deleted behind the
		// engine's back (thread_deleted); otherwise not found.
		st, err := r.h.queries.VerifyThread.Handle(ctx, a.ThreadID)
		if err != nil {
			return nil, err
		}
		return &hashStatusResolver{st: st, now: r.h.queries.Clock.Now().UTC()}, nil
	}
	if err := chargeVerify(ctx, t.StepCount); err != nil {
		return nil, err
	}
	m, err := r.h.queries.VerifyThreads.Handle(ctx, []string{t.ID})
	if err != nil {
		return nil, err
	}
	return &hashStatusResolver{st: m[t.ID], now: r.h.queries.Clock.Now().UTC()}, nil
}

type connectionResolver struct {
	threads []*threadResolver
	page    readmodel.ThreadPage
	search  readmodel.ThreadSearch
	h       *Handler

	// The total is counted once, when totalCount or totalCountIsExact is
	// first resolved: a page that selects neither never counts.
	once  sync.Once
	total readmodel.Total
	err   error
}

func (c *connectionResolver) Threads() []*threadResolver { return c.threads }

func (c *connectionResolver) count(ctx context.Context) (readmodel.Total, error) {
	c.once.Do(func() {
		if t, ok := c.page.WholeTotal(); ok {
			c.total = t // the page is every match
			return
		}
		c.total, c.err = c.h.queries.Count.Handle(ctx, c.search)
	})
	return c.total, c.err
}

func (c *connectionResolver) TotalCount(ctx context.Context) (int32, error) {
	t, err := c.count(ctx)
	return int32(t.Count), err
}

func (c *connectionResolver) TotalCountIsExact(ctx context.Context) (bool, error) {
	t, err := c.count(ctx)
	return t.Exact, err
}

func (c *connectionResolver) PageInfo() *pageInfoResolver { return &pageInfoResolver{p: c.page} }

// pageInfoResolver is a connection's PageInfo.
type pageInfoResolver struct{ p readmodel.ThreadPage }

func (p *pageInfoResolver) HasNextPage() bool     { return p.p.HasNext }
func (p *pageInfoResolver) HasPreviousPage() bool { return p.p.HasPrevious }
func (p *pageInfoResolver) StartCursor() *string  { return optString(p.p.StartCursor) }
func (p *pageInfoResolver) EndCursor() *string    { return optString(p.p.EndCursor) }

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// threadResolver resolves one thread; g is the list it was loaded with.
type threadResolver struct {
	// Plain copies are exported fields (see stepResolver).
	ID                              graphql.ID
	Label, ContractID, ContractName *string
	OwnerID, Status                 string
	Error                           *string

	t ports.ThreadView
	g *threadGroup
}

func newThreadResolver(t ports.ThreadView, g *threadGroup) *threadResolver {
	return &threadResolver{ID: graphql.ID(t.ID), Label: t.Label, ContractID: t.ContractID, ContractName: t.ContractName,
		OwnerID: t.OwnerID, Status: t.Status, Error: t.Error, t: t, g: g}
}

func (r *threadResolver) CompanyID() string    { return CompanyID }
func (r *threadResolver) EndReason() *string   { return r.t.EndReason }
func (r *threadResolver) CreatedBy() *string   { return strPtr(r.t.OwnerID) }
func (r *threadResolver) LastHash() *string    { return strPtr(r.t.LastHash) }
func (r *threadResolver) StartedAt() *string   { s := r.t.Started(); return timePtr(&s) }
func (r *threadResolver) CompletedAt() *string { return timePtr(r.t.CompletedAt) }
func (r *threadResolver) ContractVersion() *int32 {
	if r.t.ContractVersion == nil {
		return nil
	}
	v := int32(*r.t.ContractVersion)
	return &v
}

func (r *threadResolver) Refs() *JSON {
	s := readmodel.RefsJSON(r.t.Refs)
	if s == nil {
		return nil
	}
	return jsonPtr(*s)
}

// stepsArgs are the arguments of Thread.steps.
type stepsArgs struct {
	StepName, IdempotencyKey, Status *string
	FirstOfEachName                  *bool
	Limit, Offset                    *int32
}

func (a stepsArgs) selection() readmodel.StepSelection {
	return readmodel.StepSelection{StepName: deref(a.StepName), IdempotencyKey: deref(a.IdempotencyKey), Status: deref(a.Status),
		Limit: i32(a.Limit), Offset: i32(a.Offset), FirstOfName: a.FirstOfEachName != nil && *a.FirstOfEachName}
}

// stepsKey identifies a Thread.steps argument set: its loads are shared.
func stepsKey(sel readmodel.StepSelection) string {
	return fmt.Sprintf("%s\x00%s\x00%s\x00%d\x00%d\x00%t", sel.StepName, sel.IdempotencyKey, sel.Status, deref32(sel.Limit), deref32(sel.Offset), sel.FirstOfName)
}

func (r *threadResolver) Steps(ctx context.Context, a stepsArgs) ([]*stepResolver, error) {
	sel := a.selection()
	l, err := r.g.loadSteps(ctx, stepsKey(sel), sel)
	if err != nil {
		return nil, err
	}
	steps := l.byThread[r.t.ID]
	out := make([]*stepResolver, len(steps))
	for i := range steps {
		out[i] = newStepResolver(steps[i], l.group)
	}
	return out, nil
}

type validationOptions struct {
	ThreadID, StepID, StepName, IdempotencyKey, ValidationType *string
	Limit, Offset                                              *int32
}

func (r *threadResolver) ValidationResults(ctx context.Context, a struct{ Options *validationOptions }) ([]*validationResolver, error) {
	var va readmodel.ValidationArgs
	if o := a.Options; o != nil {
		va = readmodel.ValidationArgs{StepID: deref(o.StepID), StepName: deref(o.StepName), IdempotencyKey: deref(o.IdempotencyKey),
			ValidationType: deref(o.ValidationType), Limit: i32(o.Limit), Offset: i32(o.Offset)}
		// options.threadId narrows to one thread: others get nothing.
		if o.ThreadID != nil && *o.ThreadID != "" && *o.ThreadID != r.t.ID {
			return []*validationResolver{}, nil
		}
	}
	key := fmt.Sprintf("%+v|%v|%v", va, deref32(va.Limit), deref32(va.Offset))
	m, err := r.g.valids.get(key, func() (map[string][]ports.ValidationView, error) {
		return r.g.reads.Validations.Handle(ctx, r.g.ids, va)
	})
	if err != nil {
		return nil, err
	}
	return validations(m[r.t.ID]), nil
}

func deref32(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

func (r *threadResolver) NotificationSummary(ctx context.Context) (*notificationSummaryResolver, error) {
	m, err := r.g.counts.get(func() (map[string]ports.NotificationCounts, error) {
		return r.g.reads.NotificationCounts.Handle(ctx, r.g.ids)
	})
	if err != nil {
		return nil, err
	}
	return &notificationSummaryResolver{c: m[r.t.ID]}, nil
}

type notificationOptions struct {
	ThreadID, StepID, StepName, Source, NotificationType *string
	Severity                                             *[]string
	Limit, Offset                                        *int32
}

func (r *threadResolver) Notifications(ctx context.Context, a struct{ Options *notificationOptions }) ([]*notificationResolver, error) {
	var na readmodel.NotificationArgs
	if o := a.Options; o != nil {
		if o.ThreadID != nil && *o.ThreadID != "" && *o.ThreadID != r.t.ID {
			return []*notificationResolver{}, nil
		}
		na = readmodel.NotificationArgs{StepID: deref(o.StepID), StepName: deref(o.StepName), Source: deref(o.Source),
			NotificationType: deref(o.NotificationType), Limit: i32(o.Limit), Offset: i32(o.Offset)}
		if o.Severity != nil {
			na.Severities = *o.Severity
		}
	}
	key := fmt.Sprintf("%s|%s|%s|%s|%s|%d|%d", na.StepID, na.StepName, na.Source, na.NotificationType,
		strings.Join(na.Severities, ","), deref32(na.Limit), deref32(na.Offset))
	m, err := r.g.notifs.get(key, func() (map[string][]ports.NotificationView, error) {
		return r.g.reads.Notifications.Handle(ctx, r.g.ids, na)
	})
	if err != nil {
		return nil, err
	}
	ns := m[r.t.ID]
	out := make([]*notificationResolver, len(ns))
	for i := range ns {
		out[i] = &notificationResolver{n: ns[i]}
	}
	return out, nil
}

func (r *threadResolver) ThreadChain(ctx context.Context, a struct{ MaxDepth *int32 }) ([]*threadResolver, error) {
	depth := i32(a.MaxDepth)
	key := fmt.Sprint(deref32(depth))
	m, err := r.g.chains.get(key, func() (map[string][]ports.ThreadView, error) { return r.g.reads.Chains.Handle(ctx, r.g.ids, depth) })
	if err != nil {
		return nil, err
	}
	list := m[r.t.ID]
	return newThreadGroup(r.g.reads, list).resolvers(list), nil
}

func (r *threadResolver) chainStatus(ctx context.Context) (domain.ChainStatus, error) {
	m, err := r.g.verified(ctx)
	if err != nil {
		return domain.ChainStatus{}, err
	}
	return m[r.t.ID], nil
}

func (r *threadResolver) HashChainVerified(ctx context.Context) (*bool, error) {
	st, err := r.chainStatus(ctx)
	if err != nil {
		return nil, err
	}
	return &st.Verified, nil
}

func (r *threadResolver) HashChainStatus(ctx context.Context) (*hashStatusResolver, error) {
	st, err := r.chainStatus(ctx)
	if err != nil {
		return nil, err
	}
	return &hashStatusResolver{st: st, now: r.g.reads.Clock.Now().UTC()}, nil
}

// stepResolver resolves one step state; g is the set it was loaded with.
type stepResolver struct {
	// Plain copies are exported fields: with UseFieldResolvers graph-gophers
	// reads them directly instead of calling a method through reflection,
	// which matters for the 100 steps a thread can return.
	ThreadID, StepName, IdempotencyKey, Status, LatestStepID string
	RetryCount                                               int32
	PreviousStep                                             *string

	s ports.StepView
	g *stepGroup
}

func newStepResolver(s ports.StepView, g *stepGroup) *stepResolver {
	return &stepResolver{ThreadID: s.ThreadID, StepName: s.StepName, IdempotencyKey: s.IdempotencyKey, Status: s.Status,
		LatestStepID: s.LatestStepID, RetryCount: int32(s.RetryCount), PreviousStep: s.PreviousStep, s: s, g: g}
}

func (r *stepResolver) FirstSeenAt() string   { return rfc3339(r.s.FirstSeenAt) }
func (r *stepResolver) LastUpdatedAt() string { return rfc3339(r.s.LastUpdatedAt) }
func (r *stepResolver) StartedAt() *string    { return timePtr(r.s.StartedAt) }
func (r *stepResolver) FinishedAt() *string   { return timePtr(r.s.FinishedAt) }
func (r *stepResolver) Actor() *string        { return strPtr(r.s.Actor) }
func (r *stepResolver) ActorService() *string { return strPtr(r.s.ActorService) }
func (r *stepResolver) LatestContext() *JSON  { return jsonPtr(r.s.LatestContext) }
func (r *stepResolver) Hash() *string         { return strPtr(r.s.Hash) }
func (r *stepResolver) PrevHash() *string     { return strPtr(r.s.PrevHash) }

func (r *stepResolver) chainStatus(ctx context.Context) (domain.ChainStatus, error) {
	m, err := r.g.tg.verified(ctx)
	if err != nil {
		return domain.ChainStatus{}, err
	}
	return m[r.s.ThreadID], nil
}

// Verified is false for the step identity holding the thread's first
// unverifiable attempt, so a tampered chain names the altered step; the
// thread's hashChainStatus says whether the chain as a whole verifies.
func (r *stepResolver) Verified(ctx context.Context) (*bool, error) {
	st, err := r.chainStatus(ctx)
	if err != nil {
		return nil, err
	}
	ok := st.Verified || !r.holdsBreak(st)
	return &ok, nil
}

func (r *stepResolver) holdsBreak(st domain.ChainStatus) bool {
	return st.BrokenStepName == r.s.StepName && st.BrokenIdempotencyKey == r.s.IdempotencyKey
}

func (r *stepResolver) VerificationError(ctx context.Context) (*string, error) {
	st, err := r.chainStatus(ctx)
	if err != nil || st.Verified || !r.holdsBreak(st) {
		return nil, err
	}
	return strPtr(st.Error), nil
}

type historyArgs struct {
	Limit, Offset                       *int32
	StartAt, EndAt, ActivityType, Actor *string
}

func (r *stepResolver) History(ctx context.Context, a historyArgs) ([]*historyResolver, error) {
	ha := readmodel.HistoryArgs{Limit: i32(a.Limit), Offset: i32(a.Offset), StartAt: deref(a.StartAt), EndAt: deref(a.EndAt),
		ActivityType: deref(a.ActivityType), Actor: deref(a.Actor)}
	key := fmt.Sprintf("%d|%d|%s|%s|%s|%s", deref32(ha.Limit), deref32(ha.Offset), ha.StartAt, ha.EndAt, ha.ActivityType, ha.Actor)
	g := r.g
	m, err := g.history.get(key, func() (map[ports.StepKey][]ports.ActivityView, error) {
		return g.reads.StepHistories.Handle(ctx, g.keys, ha)
	})
	if err != nil {
		return nil, err
	}
	return histories(m[r.s.StepKey]), nil
}

func (r *stepResolver) SubSteps(ctx context.Context) ([]*subStepResolver, error) {
	g := r.g
	m, err := g.subs.get(func() (map[ports.StepKey][]ports.SubStepView, error) { return g.reads.SubSteps.Handle(ctx, g.keys) })
	if err != nil {
		return nil, err
	}
	ss := m[r.s.StepKey]
	out := make([]*subStepResolver, len(ss))
	for i := range ss {
		out[i] = &subStepResolver{s: ss[i]}
	}
	return out, nil
}

func histories(acts []ports.ActivityView) []*historyResolver {
	out := make([]*historyResolver, len(acts))
	for i := range acts {
		a := &acts[i]
		out[i] = &historyResolver{Attempt: int32(a.Attempt), Status: a.Status, Context: a.Context, Actor: a.Actor,
			ActorService: a.ActorService, a: *a}
	}
	return out
}

type historyResolver struct {
	// Plain copies are exported fields (see stepResolver): history lists
	// can hold 1000 attempts.
	Attempt                              int32
	Status, Context, Actor, ActorService string

	a ports.ActivityView
}

func (r *historyResolver) Timestamp() string   { return rfc3339(r.a.RecordedAt) }
func (r *historyResolver) StartedAt() *string  { return timePtr(r.a.StartedAt) }
func (r *historyResolver) FinishedAt() *string { return timePtr(r.a.FinishedAt) }
func (r *historyResolver) Metadata() *string   { return &r.a.Metadata }
func (r *historyResolver) CompanyID() string   { return CompanyID }
func (r *historyResolver) CompanyName() string { return CompanyName }
func (r *historyResolver) Hash() *string       { return strPtr(r.a.Hash) }
func (r *historyResolver) PrevHash() *string   { return strPtr(r.a.PrevHash) }
func (r *historyResolver) Validation() *string { return strPtr(r.a.Validation) }

// Duration is finishedAt − startedAt in milliseconds, 0 when unknown.
func (r *historyResolver) Duration() int32 {
	if r.a.StartedAt == nil || r.a.FinishedAt == nil || r.a.FinishedAt.Before(*r.a.StartedAt) {
		return 0
	}
	return int32(r.a.FinishedAt.Sub(*r.a.StartedAt).Milliseconds())
}

// Error comes from metadata.error (a string, or an object as JSON), only for
// failed attempts; the Node SDK's failed("msg") stores metadata.message, the
// fallback.
func (r *historyResolver) Error() *string {
	if r.a.Status != "failed" && r.a.Status != "error" {
		return nil
	}
	var m map[string]any
	if json.Unmarshal([]byte(r.a.Metadata), &m) != nil {
		return nil
	}
	for _, k := range []string{"error", "message"} {
		switch v := m[k].(type) {
		case nil:
		case string:
			if v != "" {
				return &v
			}
		default:
			b, _ := json.Marshal(v)
			s := string(b)
			return &s
		}
	}
	return nil
}

type subStepResolver struct{ s ports.SubStepView }

func (r *subStepResolver) ID() graphql.ID     { return graphql.ID(r.s.ID) }
func (r *subStepResolver) ThreadID() string   { return r.s.ThreadID }
func (r *subStepResolver) StepID() string     { return r.s.StepID }
func (r *subStepResolver) Name() string       { return r.s.Name }
func (r *subStepResolver) Status() string     { return r.s.Status }
func (r *subStepResolver) Payload() *JSON     { return jsonPtr(r.s.Payload) }
func (r *subStepResolver) RecordedAt() string { return rfc3339(r.s.RecordedAt) }
func (r *subStepResolver) CreatedAt() string  { return rfc3339(r.s.CreatedAt) }

type hashStatusResolver struct {
	st  domain.ChainStatus
	now time.Time
}

func (r *hashStatusResolver) Verified() bool         { return r.st.Verified }
func (r *hashStatusResolver) LastVerifiedAt() string { return rfc3339(r.now) }
func (r *hashStatusResolver) TotalEvents() int32     { return int32(r.st.TotalEvents) }
func (r *hashStatusResolver) Error() *string         { return strPtr(r.st.Error) }

// BrokenAt is when the first unverifiable link was recorded.
func (r *hashStatusResolver) BrokenAt() *string {
	if r.st.Verified {
		return nil
	}
	if r.st.BrokenAt != nil {
		return timePtr(r.st.BrokenAt)
	}
	s := rfc3339(r.now)
	return &s
}

func validations(vs []ports.ValidationView) []*validationResolver {
	out := make([]*validationResolver, len(vs))
	for i := range vs {
		out[i] = &validationResolver{v: vs[i]}
	}
	return out
}

type validationResolver struct {
	v      ports.ValidationView
	once   sync.Once
	issues []*issueResolver
}

func (r *validationResolver) ValidationID() string          { return r.v.ID }
func (r *validationResolver) ThreadID() string              { return r.v.ThreadID }
func (r *validationResolver) StepID() string                { return r.v.StepID }
func (r *validationResolver) StepName() string              { return r.v.StepName }
func (r *validationResolver) IdempotencyKey() string        { return r.v.IdempotencyKey }
func (r *validationResolver) Timestamp() string             { return rfc3339(r.v.CreatedAt) }
func (r *validationResolver) OverallStatus() string         { return r.v.OverallStatus }
func (r *validationResolver) HasCriticalViolation() bool    { return r.v.CriticalCount > 0 }
func (r *validationResolver) CriticalCount() int32          { return int32(r.v.CriticalCount) }
func (r *validationResolver) WarningCount() int32           { return int32(r.v.WarningCount) }
func (r *validationResolver) MinorCount() int32             { return int32(r.v.MinorCount) }
func (r *validationResolver) InfoCount() int32              { return int32(r.v.InfoCount) }
func (r *validationResolver) Validations() []*issueResolver { return r.list() }
func (r *validationResolver) TotalValidations() int32       { return int32(len(r.list())) }

// list decodes the stored issues once.
func (r *validationResolver) list() []*issueResolver {
	r.once.Do(func() {
		var issues []domain.ValidationIssue
		_ = json.Unmarshal([]byte(r.v.Issues), &issues)
		r.issues = make([]*issueResolver, len(issues))
		for i := range issues {
			r.issues[i] = &issueResolver{i: issues[i]}
		}
	})
	return r.issues
}

type issueResolver struct{ i domain.ValidationIssue }

func (r *issueResolver) Type() string      { return r.i.Type }
func (r *issueResolver) Message() string   { return r.i.Message }
func (r *issueResolver) Field() *string    { return strPtr(r.i.Field) }
func (r *issueResolver) Expected() *string { return strPtr(r.i.Expected) }
func (r *issueResolver) Actual() *string   { return strPtr(r.i.Actual) }
func (r *issueResolver) Rule() *string     { return strPtr(r.i.Rule) }
func (r *issueResolver) Severity() *string { return strPtr(string(r.i.Severity)) }

type notificationSummaryResolver struct{ c ports.NotificationCounts }

func (r *notificationSummaryResolver) TotalNotifications() int32 { return int32(r.c.Total) }
func (r *notificationSummaryResolver) CriticalCount() int32      { return int32(r.c.Critical) }
func (r *notificationSummaryResolver) WarningCount() int32       { return int32(r.c.Warning) }
func (r *notificationSummaryResolver) MajorCount() int32         { return int32(r.c.Major) }
func (r *notificationSummaryResolver) MinorCount() int32         { return int32(r.c.Minor) }
func (r *notificationSummaryResolver) InfoCount() int32          { return int32(r.c.Info) }
func (r *notificationSummaryResolver) ExecutionCount() int32     { return int32(r.c.Execution) }
func (r *notificationSummaryResolver) ValidationCount() int32    { return int32(r.c.Validation) }
func (r *notificationSummaryResolver) HasCritical() bool         { return r.c.Critical > 0 }
func (r *notificationSummaryResolver) HasWarnings() bool         { return r.c.Warning > 0 }

type notificationResolver struct{ n ports.NotificationView }

func (r *notificationResolver) NotificationID() string    { return r.n.ID }
func (r *notificationResolver) ThreadID() string          { return r.n.ThreadID }
func (r *notificationResolver) StepID() string            { return r.n.StepID }
func (r *notificationResolver) StepName() string          { return r.n.StepName }
func (r *notificationResolver) IdempotencyKey() *string   { return strPtr(r.n.IdempotencyKey) }
func (r *notificationResolver) Source() string            { return r.n.Source }
func (r *notificationResolver) NotificationType() string  { return r.n.NotificationType }
func (r *notificationResolver) StepStatus() *string       { return strPtr(r.n.StepStatus) }
func (r *notificationResolver) ValidationStatus() *string { return strPtr(r.n.ValidationStatus) }
func (r *notificationResolver) ViolationType() *string    { return strPtr(r.n.ViolationType) }
func (r *notificationResolver) Severity() *string         { return strPtr(r.n.Severity) }
func (r *notificationResolver) Message() string           { return r.n.Message }
func (r *notificationResolver) Details() *JSON            { return jsonPtr(r.n.Details) }
func (r *notificationResolver) Timestamp() string         { return rfc3339(r.n.CreatedAt) }

// contractGraphResolver presents a contract as the reference's graph.
type contractGraphResolver struct{ c domain.Contract }

func (r *contractGraphResolver) Graph() *graphResolver { return &graphResolver{c: r.c} }
func (r *contractGraphResolver) Parties() *[]string {
	p := append([]string{}, r.c.Parties...)
	return &p
}
func (r *contractGraphResolver) NotificationConfig() *notificationConfigResolver { return nil }

func (r *contractGraphResolver) Transitions() *[]*transitionResolver {
	out := make([]*transitionResolver, len(r.c.Transitions))
	for i := range r.c.Transitions {
		out[i] = &transitionResolver{t: r.c.Transitions[i], c: r.c}
	}
	return &out
}

func (r *contractGraphResolver) Validation() *validationRulesResolver {
	return &validationRulesResolver{c: r.c}
}

type graphResolver struct{ c domain.Contract }

func (r *graphResolver) EntryPoints() []string   { return append([]string{}, r.c.EntryPoints...) }
func (r *graphResolver) TerminalSteps() []string { return append([]string{}, r.c.TerminalSteps...) }
func (r *graphResolver) Nodes() []*graphNodeResolver {
	out := make([]*graphNodeResolver, len(r.c.Steps))
	for i := range r.c.Steps {
		out[i] = &graphNodeResolver{s: r.c.Steps[i], c: r.c}
	}
	return out
}

type graphNodeResolver struct {
	s domain.ContractStep
	c domain.Contract
}

func (r *graphNodeResolver) ID() string           { return r.s.Name }
func (r *graphNodeResolver) Owner() *string       { return strPtr(r.s.Owner) }
func (r *graphNodeResolver) Type() string         { return r.s.Type }
func (r *graphNodeResolver) Mode() *string        { return nil }
func (r *graphNodeResolver) Steps() *[]string     { return nil }
func (r *graphNodeResolver) MaxDuration() *string { return nil }
func (r *graphNodeResolver) ParentGroup() *string { return nil }
func (r *graphNodeResolver) Next() *[]string {
	n := r.c.AllowedNext(r.s.Name)
	n = append([]string{}, n...)
	return &n
}

// Required: a step is required when it lies on every path, which contracts
// do not declare; entry points are the steps a thread cannot skip.
func (r *graphNodeResolver) Required() bool { return r.c.IsEntryPoint(r.s.Name) }

func (r *graphNodeResolver) Timeout() *string {
	if r.s.Timeout <= 0 {
		return nil
	}
	s := r.s.Timeout.String()
	return &s
}

func (r *graphNodeResolver) BusinessContext() *JSON {
	if len(r.s.Required) == 0 && len(r.s.Optional) == 0 && r.s.Description == "" {
		return nil
	}
	b, _ := json.Marshal(map[string]any{"required": nonNil(r.s.Required), "optional": nonNil(r.s.Optional), "description": r.s.Description})
	return jsonPtr(string(b))
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

type transitionResolver struct {
	t domain.Transition
	c domain.Contract
}

func (r *transitionResolver) From() string      { return r.t.From }
func (r *transitionResolver) To() []string      { return append([]string{}, r.t.To...) }
func (r *transitionResolver) MaxRetries() int32 { return int32(r.t.MaxRetries) }
func (r *transitionResolver) CanRetry() bool    { return r.t.CanRetry }
func (r *transitionResolver) Timeout() *string {
	if r.t.Timeout > 0 {
		v := r.t.Timeout.String()
		return &v
	}
	if s, ok := r.c.Step(r.t.From); ok && s.Timeout > 0 {
		v := s.Timeout.String()
		return &v
	}
	return nil
}

type validationRulesResolver struct{ c domain.Contract }

func (r *validationRulesResolver) AllowMultipleTerminals() bool { return r.c.AllowMultipleTerminals }
func (r *validationRulesResolver) MaxDuration() *string {
	if r.c.MaxDuration <= 0 {
		return nil
	}
	s := r.c.MaxDuration.String()
	return &s
}
func (r *validationRulesResolver) MultipleTerminalsSeverity() *string {
	return strPtr(string(r.c.MultipleTerminalsSeverity))
}

type notificationConfigResolver struct{}

func (*notificationConfigResolver) DefaultScope() *string { return nil }
func (*notificationConfigResolver) RoleDefaults() *JSON   { return nil }
