package readmodel

import (
	"context"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/integrity"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// PartyReader is what the scope reads to limit a party-scoped caller: which
// of some threads it is a party of.
type PartyReader interface {
	// PartyThreads returns those of ids that p is a party of, in any order.
	PartyThreads(ctx context.Context, p ports.PartyOf, ids []string) ([]string, error)
}

// Scope is the rule every thread read goes through, shared by the
// handlers: threads.read is required, humans and company-scoped service
// accounts see every thread, and a party-scoped service account sees only
// the threads it is a party of: the others are dropped before anything
// about them is read, so a thread the caller may not see answers exactly
// like one that does not exist, at the root of a request and in every
// nested list and link. It holds only PartyReader; each handler limits
// its own narrow port through the caller's view (open).
type Scope struct {
	parties PartyReader
	clock   ports.Clock
}

// NewScope builds the read scope; clock judges grants (nil: the system's).
func NewScope(parties PartyReader, clock ports.Clock) Scope {
	if clock == nil {
		clock = ports.SystemClock{}
	}
	return Scope{parties: parties, clock: clock}
}

// view is one caller's scope: party is nil for a caller that sees every
// thread.
type view struct {
	parties PartyReader
	party   *ports.PartyOf
}

// open checks threads.read and returns the caller's view.
func (s Scope) open(ctx context.Context) (view, error) {
	p, err := authz.Require(ctx, domain.PermThreadsRead)
	if err != nil {
		return view{}, err
	}
	if !p.PartyScoped() {
		return view{}, nil
	}
	return view{parties: s.parties, party: &ports.PartyOf{PrincipalID: p.ID, Now: s.clock.Now().UTC()}}, nil
}

// AuthorizeRead refuses a caller that may not read threads, for transports
// that must refuse before doing any work (GraphQL before pricing a query);
// every read handler checks the same again.
func AuthorizeRead(ctx context.Context) error {
	_, err := authz.Require(ctx, domain.PermThreadsRead)
	return err
}

// visible returns the ids the principal is a party of, in the order given.
func (v view) visible(ctx context.Context, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	ok, err := v.parties.PartyThreads(ctx, *v.party, dedupe(ids))
	if err != nil {
		return nil, err
	}
	set := idSet(ok)
	out := make([]string, 0, len(ok))
	for _, id := range ids {
		if set[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

func idSet(ids []string) map[string]bool {
	set := make(map[string]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return set
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

// visibleSteps keeps the steps of threads the principal is a party of.
func (v view) visibleSteps(ctx context.Context, steps []ports.StepKey) ([]ports.StepKey, error) {
	ids := make([]string, len(steps))
	for i, s := range steps {
		ids[i] = s.ThreadID
	}
	ok, err := v.visible(ctx, ids)
	if err != nil || len(ok) == 0 {
		return nil, err
	}
	set := idSet(ok)
	out := make([]ports.StepKey, 0, len(steps))
	for _, s := range steps {
		if set[s.ThreadID] {
			out = append(out, s)
		}
	}
	return out, nil
}

// perThread reads one field of each visible thread of ids; an empty
// visible set answers an empty map without reading.
func perThread[V any](ctx context.Context, v view, ids []string, read func([]string) (map[string]V, error)) (map[string]V, error) {
	if v.party == nil {
		return read(ids)
	}
	ids, err := v.visible(ctx, ids)
	if err != nil || len(ids) == 0 {
		return map[string]V{}, err
	}
	return read(ids)
}

// perStep reads one field of each step of a visible thread.
func perStep[V any](ctx context.Context, v view, steps []ports.StepKey, read func([]ports.StepKey) (map[ports.StepKey]V, error)) (map[ports.StepKey]V, error) {
	if v.party == nil {
		return read(steps)
	}
	steps, err := v.visibleSteps(ctx, steps)
	if err != nil || len(steps) == 0 {
		return map[ports.StepKey]V{}, err
	}
	return read(steps)
}

// threads reads the rows of the visible threads of ids.
func (v view) threads(ctx context.Context, st ThreadRows, ids []string) ([]ports.ThreadView, error) {
	if v.party != nil {
		var err error
		if ids, err = v.visible(ctx, ids); err != nil || len(ids) == 0 {
			return nil, err
		}
	}
	return st.GetThreads(ctx, ids)
}

// filter limits a thread search to the principal's threads.
func (v view) filter(f ports.ThreadFilter) ports.ThreadFilter {
	if v.party != nil {
		party := *v.party
		f.Party = &party
	}
	return f
}

// history reads one step's activities when its thread is visible.
func (v view) history(ctx context.Context, st HistoryReader, key ports.StepKey, f ports.HistoryFilter) ([]ports.ActivityView, error) {
	if v.party != nil {
		ids, err := v.visible(ctx, []string{key.ThreadID})
		if err != nil || len(ids) == 0 {
			return nil, err
		}
	}
	return st.History(ctx, key, f)
}

// keepVisible drops, from each list, the ids the principal is not a party
// of (a chain or link through a thread it may not see still reaches the
// visible threads beyond it, which it may read anyway).
func keepVisible[T any](ctx context.Context, v view, lists map[string][]T, id func(T) string) (map[string][]T, error) {
	var ids []string
	for _, l := range lists {
		for _, x := range l {
			ids = append(ids, id(x))
		}
	}
	ok, err := v.visible(ctx, ids)
	if err != nil {
		return nil, err
	}
	set := idSet(ok)
	out := make(map[string][]T, len(lists))
	for k, l := range lists {
		kept := make([]T, 0, len(l))
		for _, x := range l {
			if set[id(x)] {
				kept = append(kept, x)
			}
		}
		out[k] = kept
	}
	return out, nil
}

// scopedIntegrity is integrity.Reader limited to one principal's threads,
// for verification through the caller's scope.
type scopedIntegrity struct {
	v  view
	st integrity.Reader
}

func (s scopedIntegrity) GetThreads(ctx context.Context, ids []string) ([]ports.ThreadView, error) {
	return s.v.threads(ctx, s.st, ids)
}

func (s scopedIntegrity) Activities(ctx context.Context, threadIDs []string) (map[string][]ports.ActivityView, error) {
	return perThread(ctx, s.v, threadIDs, func(ids []string) (map[string][]ports.ActivityView, error) { return s.st.Activities(ctx, ids) })
}

func (s scopedIntegrity) SubSteps(ctx context.Context, steps []ports.StepKey) (map[ports.StepKey][]ports.SubStepView, error) {
	return perStep(ctx, s.v, steps, func(keys []ports.StepKey) (map[ports.StepKey][]ports.SubStepView, error) {
		return s.st.SubSteps(ctx, keys)
	})
}
