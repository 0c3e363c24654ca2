package readmodel

import (
	"context"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// scope is what every read goes through: the store, limited to what the
// caller may see, and the clock grants are judged by.
type scope struct {
	store ports.ThreadQueries
	clock ports.Clock
}

// reader checks threads.read and returns the store the caller reads through:
// the whole store for humans and company-scoped service accounts, and for a
// party-scoped service account a view that drops every thread it is not a
// party of before anything about it is read. Every query reads through it,
// so a thread the caller may not see answers exactly like one that does not
// exist, at the root of a request and in every nested list and link.
func (q scope) reader(ctx context.Context) (ports.ThreadQueries, error) {
	p, err := authz.Require(ctx, domain.PermThreadsRead)
	if err != nil {
		return nil, err
	}
	if !p.PartyScoped() {
		return q.store, nil
	}
	return partyView{store: q.store, party: ports.PartyOf{PrincipalID: p.ID, Now: q.clock.Now().UTC()}}, nil
}

// partyView is ports.ThreadQueries limited to one principal's threads. It
// lists every method (no embedding), so a read added to the port does not
// compile until it is limited here too.
type partyView struct {
	store ports.ThreadQueries
	party ports.PartyOf
}

var _ ports.ThreadQueries = partyView{}

// visible returns the ids the principal is a party of, in the order given.
func (v partyView) visible(ctx context.Context, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	ok, err := v.store.PartyThreads(ctx, v.party, dedupe(ids))
	if err != nil {
		return nil, err
	}
	set := make(map[string]bool, len(ok))
	for _, id := range ok {
		set[id] = true
	}
	out := make([]string, 0, len(ok))
	for _, id := range ids {
		if set[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

func dedupe(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

func (v partyView) visibleSteps(ctx context.Context, steps []ports.StepKey) ([]ports.StepKey, error) {
	ids := make([]string, len(steps))
	for i, s := range steps {
		ids[i] = s.ThreadID
	}
	ok, err := v.visible(ctx, ids)
	if err != nil || len(ok) == 0 {
		return nil, err
	}
	set := make(map[string]bool, len(ok))
	for _, id := range ok {
		set[id] = true
	}
	out := make([]ports.StepKey, 0, len(steps))
	for _, s := range steps {
		if set[s.ThreadID] {
			out = append(out, s)
		}
	}
	return out, nil
}

func (v partyView) GetThreads(ctx context.Context, ids []string) ([]ports.ThreadView, error) {
	ids, err := v.visible(ctx, ids)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	return v.store.GetThreads(ctx, ids)
}

func (v partyView) ListThreads(ctx context.Context, f ports.ThreadFilter) ([]ports.ThreadView, error) {
	party := v.party
	f.Party = &party
	return v.store.ListThreads(ctx, f)
}

func (v partyView) CountThreads(ctx context.Context, f ports.ThreadFilter, upTo int) (int, error) {
	party := v.party
	f.Party = &party
	return v.store.CountThreads(ctx, f, upTo)
}

func (v partyView) Refs(ctx context.Context, threadIDs []string) (map[string]map[string]string, error) {
	ids, err := v.visible(ctx, threadIDs)
	if err != nil || len(ids) == 0 {
		return map[string]map[string]string{}, err
	}
	return v.store.Refs(ctx, ids)
}

func (v partyView) Steps(ctx context.Context, threadIDs []string, f ports.StepFilter, perThread int) (map[string][]ports.StepView, error) {
	ids, err := v.visible(ctx, threadIDs)
	if err != nil || len(ids) == 0 {
		return map[string][]ports.StepView{}, err
	}
	return v.store.Steps(ctx, ids, f, perThread)
}

func (v partyView) StepHistories(ctx context.Context, steps []ports.StepKey, f ports.HistoryFilter) (map[ports.StepKey][]ports.ActivityView, error) {
	steps, err := v.visibleSteps(ctx, steps)
	if err != nil || len(steps) == 0 {
		return map[ports.StepKey][]ports.ActivityView{}, err
	}
	return v.store.StepHistories(ctx, steps, f)
}

func (v partyView) History(ctx context.Context, key ports.StepKey, f ports.HistoryFilter) ([]ports.ActivityView, error) {
	ids, err := v.visible(ctx, []string{key.ThreadID})
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	return v.store.History(ctx, key, f)
}

func (v partyView) SubSteps(ctx context.Context, steps []ports.StepKey) (map[ports.StepKey][]ports.SubStepView, error) {
	steps, err := v.visibleSteps(ctx, steps)
	if err != nil || len(steps) == 0 {
		return map[ports.StepKey][]ports.SubStepView{}, err
	}
	return v.store.SubSteps(ctx, steps)
}

func (v partyView) StepGroups(ctx context.Context, threadIDs []string, perThread int) (map[string][]ports.StepGroupView, error) {
	ids, err := v.visible(ctx, threadIDs)
	if err != nil || len(ids) == 0 {
		return map[string][]ports.StepGroupView{}, err
	}
	return v.store.StepGroups(ctx, ids, perThread)
}

func (v partyView) StepEdges(ctx context.Context, threadIDs []string, perThread int) (map[string][]ports.StepEdgeView, error) {
	ids, err := v.visible(ctx, threadIDs)
	if err != nil || len(ids) == 0 {
		return map[string][]ports.StepEdgeView{}, err
	}
	return v.store.StepEdges(ctx, ids, perThread)
}

func (v partyView) IssueKeys(ctx context.Context, refs []ports.IssueRef) (map[string]string, error) {
	ids := make([]string, len(refs))
	for i, r := range refs {
		ids[i] = r.ThreadID
	}
	ok, err := v.visible(ctx, ids)
	if err != nil || len(ok) == 0 {
		return map[string]string{}, err
	}
	set := make(map[string]bool, len(ok))
	for _, id := range ok {
		set[id] = true
	}
	var keep []ports.IssueRef
	for _, r := range refs {
		if set[r.ThreadID] {
			keep = append(keep, r)
		}
	}
	return v.store.IssueKeys(ctx, keep)
}

func (v partyView) Validations(ctx context.Context, threadIDs []string, f ports.ValidationFilter) (map[string][]ports.ValidationView, error) {
	ids, err := v.visible(ctx, threadIDs)
	if err != nil || len(ids) == 0 {
		return map[string][]ports.ValidationView{}, err
	}
	return v.store.Validations(ctx, ids, f)
}

func (v partyView) Notifications(ctx context.Context, threadIDs []string, f ports.NotificationFilter) (map[string][]ports.NotificationView, error) {
	ids, err := v.visible(ctx, threadIDs)
	if err != nil || len(ids) == 0 {
		return map[string][]ports.NotificationView{}, err
	}
	return v.store.Notifications(ctx, ids, f)
}

func (v partyView) NotificationCounts(ctx context.Context, threadIDs []string) (map[string]ports.NotificationCounts, error) {
	ids, err := v.visible(ctx, threadIDs)
	if err != nil || len(ids) == 0 {
		return map[string]ports.NotificationCounts{}, err
	}
	return v.store.NotificationCounts(ctx, ids)
}

// Chains keeps, of each visible root's chain, the threads the principal is a
// party of; a chain through a thread it may not see still reaches the
// visible threads beyond it, which it may read anyway.
func (v partyView) Chains(ctx context.Context, rootIDs []string, maxDepth, limit int) (map[string][]ports.ChainLink, error) {
	roots, err := v.visible(ctx, rootIDs)
	if err != nil || len(roots) == 0 {
		return map[string][]ports.ChainLink{}, err
	}
	chains, err := v.store.Chains(ctx, roots, maxDepth, limit)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, ls := range chains {
		for _, l := range ls {
			ids = append(ids, l.ThreadID)
		}
	}
	ok, err := v.visible(ctx, ids)
	if err != nil {
		return nil, err
	}
	set := make(map[string]bool, len(ok))
	for _, id := range ok {
		set[id] = true
	}
	out := make(map[string][]ports.ChainLink, len(chains))
	for root, ls := range chains {
		kept := make([]ports.ChainLink, 0, len(ls))
		for _, l := range ls {
			if set[l.ThreadID] {
				kept = append(kept, l)
			}
		}
		out[root] = kept
	}
	return out, nil
}

func (v partyView) Activities(ctx context.Context, threadIDs []string) (map[string][]ports.ActivityView, error) {
	ids, err := v.visible(ctx, threadIDs)
	if err != nil || len(ids) == 0 {
		return map[string][]ports.ActivityView{}, err
	}
	return v.store.Activities(ctx, ids)
}

func (v partyView) PartyThreads(ctx context.Context, p ports.PartyOf, ids []string) ([]string, error) {
	ids, err := v.visible(ctx, ids)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	return v.store.PartyThreads(ctx, p, ids)
}

func (v partyView) Counts(ctx context.Context, threadIDs []string) (map[string]ports.ThreadCounts, error) {
	ids, err := v.visible(ctx, threadIDs)
	if err != nil || len(ids) == 0 {
		return map[string]ports.ThreadCounts{}, err
	}
	return v.store.Counts(ctx, ids)
}

// LinkedFrom keeps visible targets and, among the threads linking to them,
// only those the principal is a party of too.
func (v partyView) LinkedFrom(ctx context.Context, threadIDs []string, limit int) (map[string][]string, error) {
	ids, err := v.visible(ctx, threadIDs)
	if err != nil || len(ids) == 0 {
		return map[string][]string{}, err
	}
	links, err := v.store.LinkedFrom(ctx, ids, limit)
	if err != nil {
		return nil, err
	}
	var srcs []string
	for _, l := range links {
		srcs = append(srcs, l...)
	}
	ok, err := v.visible(ctx, srcs)
	if err != nil {
		return nil, err
	}
	set := make(map[string]bool, len(ok))
	for _, id := range ok {
		set[id] = true
	}
	out := make(map[string][]string, len(links))
	for target, l := range links {
		for _, src := range l {
			if set[src] {
				out[target] = append(out[target], src)
			}
		}
	}
	return out, nil
}

func (v partyView) Attempts(ctx context.Context, threadIDs []string, limit, offset int) (map[string][]ports.ActivityView, error) {
	ids, err := v.visible(ctx, threadIDs)
	if err != nil || len(ids) == 0 {
		return map[string][]ports.ActivityView{}, err
	}
	return v.store.Attempts(ctx, ids, limit, offset)
}

func (v partyView) LatestValidations(ctx context.Context, steps []ports.StepKey) (map[ports.StepKey]ports.ValidationView, error) {
	steps, err := v.visibleSteps(ctx, steps)
	if err != nil || len(steps) == 0 {
		return map[ports.StepKey]ports.ValidationView{}, err
	}
	return v.store.LatestValidations(ctx, steps)
}

// AuthorizeRead refuses a caller that may not read threads, for transports
// that must refuse before doing any work (GraphQL before pricing a query);
// every read use case checks the same again.
func (q *Queries) AuthorizeRead(ctx context.Context) error {
	_, err := authz.Require(ctx, domain.PermThreadsRead)
	return err
}

// ThreadsVersion is the installation's: it tells a party-scoped reader only
// that some thread changed, not which, and its list query then shows only
// its own threads.
func (v partyView) ThreadsVersion(ctx context.Context) (string, error) {
	return v.store.ThreadsVersion(ctx)
}
