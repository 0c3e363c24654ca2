package graphqlapi

import (
	"context"
	"sync"

	"github.com/threadengine/engine/app/readmodel"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Batching: when a resolver returns a list of threads (or steps), the whole
// list becomes one group. The first child field resolved on any member loads
// that field for every member of the group with one use-case call (one SQL
// statement), and the siblings read the cached result. A request therefore
// runs one statement per (list level, field, arguments), however long its
// lists are, and it needs no timing window: graph-gophers may resolve the
// members concurrently or one after the other.

// memo runs a load once and shares its result.
type memo[T any] struct {
	once sync.Once
	v    T
	err  error
}

func (m *memo[T]) get(load func() (T, error)) (T, error) {
	m.once.Do(func() { m.v, m.err = load() })
	return m.v, m.err
}

// memoMap holds one memo per key (a field's arguments).
type memoMap[T any] struct {
	mu sync.Mutex
	m  map[string]*memo[T]
}

func (mm *memoMap[T]) get(key string, load func() (T, error)) (T, error) {
	mm.mu.Lock()
	if mm.m == nil {
		mm.m = map[string]*memo[T]{}
	}
	e := mm.m[key]
	if e == nil {
		e = &memo[T]{}
		mm.m[key] = e
	}
	mm.mu.Unlock()
	return e.get(load)
}

// threadReads are the read handlers the thread and step resolvers (a
// thread's fields, loaded for a threadGroup or stepGroup at once) use: they
// hold these, not the whole readmodel.Queries.
type threadReads struct {
	VerifyThreads      readmodel.VerifyThreadsHandler
	Steps              readmodel.StepsHandler
	Attempts           readmodel.AttemptsHandler
	StepHistories      readmodel.StepHistoriesHandler
	SubSteps           readmodel.SubStepsHandler
	StepGroups         readmodel.StepGroupsHandler
	StepEdges          readmodel.StepEdgesHandler
	IssueKeys          readmodel.IssueKeysHandler
	LatestValidations  readmodel.LatestValidationsHandler
	Validations        readmodel.ValidationsHandler
	Notifications      readmodel.NotificationsHandler
	NotificationCounts readmodel.NotificationCountsHandler
	Counts             readmodel.CountsHandler
	LinkedFrom         readmodel.LinkedFromHandler
	Chains             readmodel.ThreadChainsHandler
	Clock              ports.Clock // judges hashChainStatus.lastVerifiedAt
}

func newThreadReads(q *readmodel.Queries) *threadReads {
	return &threadReads{VerifyThreads: q.VerifyThreads, Steps: q.Steps, Attempts: q.Attempts,
		StepHistories: q.StepHistories, SubSteps: q.SubSteps, StepGroups: q.StepGroups, StepEdges: q.StepEdges,
		IssueKeys: q.IssueKeys, LatestValidations: q.LatestValidations, Validations: q.Validations,
		Notifications: q.Notifications, NotificationCounts: q.NotificationCounts, Counts: q.Counts,
		LinkedFrom: q.LinkedFrom, Chains: q.Chains, Clock: q.Clock}
}

// threadGroup is a list of threads resolved together.
type threadGroup struct {
	reads  *threadReads
	ids    []string
	work   int // recorded steps of every thread: the work of verifying them
	counts memo[map[string]ports.NotificationCounts]
	verify memo[map[string]domain.ChainStatus]
	steps  memoMap[stepLoad]
	valids memoMap[map[string][]ports.ValidationView]
	notifs memoMap[map[string][]ports.NotificationView]
	chains memoMap[map[string][]ports.ThreadView]
	sizes  memo[map[string]ports.ThreadCounts]
	tries  memoMap[map[string][]ports.ActivityView]
	linked memo[map[string][]ports.ThreadView]
	// threads are the members' rows (what IssueKeys needs).
	threads   []ports.ThreadView
	groups    memo[map[string][]ports.StepGroupView]
	edges     memo[map[string][]ports.StepEdgeView]
	issueKeys memo[map[string]string]
}

type stepLoad struct {
	byThread map[string][]ports.StepView
	group    *stepGroup
}

func newThreadGroup(reads *threadReads, threads []ports.ThreadView) *threadGroup {
	ids := make([]string, len(threads))
	steps := 0
	for i, t := range threads {
		ids[i] = t.ID
		steps += t.StepCount
	}
	return &threadGroup{reads: reads, ids: ids, work: steps, threads: threads}
}

// verified verifies the hash chain of every thread of the group once,
// within the request's verification budget.
func (g *threadGroup) verified(ctx context.Context) (map[string]domain.ChainStatus, error) {
	return g.verify.get(func() (map[string]domain.ChainStatus, error) {
		if err := chargeVerify(ctx, g.work); err != nil {
			return nil, err
		}
		return g.reads.VerifyThreads.Handle(ctx, g.ids)
	})
}

func (g *threadGroup) resolvers(threads []ports.ThreadView) []*threadResolver {
	out := make([]*threadResolver, len(threads))
	for i := range threads {
		out[i] = newThreadResolver(threads[i], g)
	}
	return out
}

// loadSteps loads the steps of every thread of the group for one argument
// set, and makes all of them one step group.
func (g *threadGroup) loadSteps(ctx context.Context, key string, sel readmodel.StepSelection) (stepLoad, error) {
	return g.steps.get(key, func() (stepLoad, error) {
		m, ok := prefetchedSteps(ctx, g.ids, key)
		if !ok {
			var err error
			if m, err = g.reads.Steps.Handle(ctx, g.ids, sel); err != nil {
				return stepLoad{}, err
			}
		}
		sg := &stepGroup{reads: g.reads, tg: g}
		for _, id := range g.ids {
			for _, s := range m[id] {
				sg.keys = append(sg.keys, s.StepKey)
			}
		}
		return stepLoad{byThread: m, group: sg}, nil
	})
}

// stepGroup is every step state loaded by one Thread.steps argument set.
type stepGroup struct {
	reads   *threadReads
	tg      *threadGroup
	keys    []ports.StepKey
	history memoMap[map[ports.StepKey][]ports.ActivityView]
	subs    memo[map[ports.StepKey][]ports.SubStepView]
	latest  memo[map[ports.StepKey]ports.ValidationView]
}
