package readmodel_test

// Each read handler over a tiny fake of the one port it takes (a function
// with that port's method), and the shared scope over a fake PartyReader:
// no SQL. The stores' own behaviour is tested in adapters/threadquery.

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/integrity"
	"github.com/threadengine/engine/app/readmodel"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// parties is a PartyReader: the principal is a party of the threads in it.
type parties struct {
	of    map[string]bool
	calls int
	asked ports.PartyOf
}

func (p *parties) PartyThreads(_ context.Context, who ports.PartyOf, ids []string) ([]string, error) {
	p.calls++
	p.asked = who
	var out []string
	for _, id := range ids {
		if p.of[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

var (
	now     = time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)
	clock   = fixedClock{}
	human   = domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleViewer}
	partySA = domain.Principal{Kind: domain.PrincipalServiceAccount, ID: "sa1", Role: domain.RoleViewer, Scope: domain.ScopeParty}
)

type fixedClock struct{}

func (fixedClock) Now() time.Time { return now }

func as(p domain.Principal) context.Context { return authz.WithPrincipal(context.Background(), p) }

// scopeOf is a party-scoped caller's scope that sees only visible.
func scopeOf(visible ...string) (readmodel.Scope, *parties) {
	p := &parties{of: map[string]bool{}}
	for _, id := range visible {
		p.of[id] = true
	}
	return readmodel.NewScope(p, clock), p
}

// One-method fakes, one per narrow port.
type (
	refsFn      func([]string) (map[string]map[string]string, error)
	countsFn    func([]string) (map[string]ports.ThreadCounts, error)
	stepsFn     func([]string, ports.StepFilter, int) (map[string][]ports.StepView, error)
	attemptsFn  func([]string, int, int) (map[string][]ports.ActivityView, error)
	groupsFn    func([]string, int) (map[string][]ports.StepGroupView, error)
	edgesFn     func([]string, int) (map[string][]ports.StepEdgeView, error)
	valsFn      func([]string, ports.ValidationFilter) (map[string][]ports.ValidationView, error)
	notesFn     func([]string, ports.NotificationFilter) (map[string][]ports.NotificationView, error)
	noteCountFn func([]string) (map[string]ports.NotificationCounts, error)
	subsFn      func([]ports.StepKey) (map[ports.StepKey][]ports.SubStepView, error)
	historiesFn func([]ports.StepKey, ports.HistoryFilter) (map[ports.StepKey][]ports.ActivityView, error)
	latestFn    func([]ports.StepKey) (map[ports.StepKey]ports.ValidationView, error)
	historyFn   func(ports.StepKey, ports.HistoryFilter) ([]ports.ActivityView, error)
	issueKeysFn func([]ports.IssueRef) (map[string]string, error)
	rowsFn      func([]string) ([]ports.ThreadView, error)
	contractFn  func(string, int) (domain.Contract, error)
)

func (f refsFn) Refs(_ context.Context, ids []string) (map[string]map[string]string, error) {
	return f(ids)
}
func (f countsFn) Counts(_ context.Context, ids []string) (map[string]ports.ThreadCounts, error) {
	return f(ids)
}
func (f stepsFn) Steps(_ context.Context, ids []string, sf ports.StepFilter, n int) (map[string][]ports.StepView, error) {
	return f(ids, sf, n)
}
func (f attemptsFn) Attempts(_ context.Context, ids []string, limit, offset int) (map[string][]ports.ActivityView, error) {
	return f(ids, limit, offset)
}
func (f groupsFn) StepGroups(_ context.Context, ids []string, n int) (map[string][]ports.StepGroupView, error) {
	return f(ids, n)
}
func (f edgesFn) StepEdges(_ context.Context, ids []string, n int) (map[string][]ports.StepEdgeView, error) {
	return f(ids, n)
}
func (f valsFn) Validations(_ context.Context, ids []string, vf ports.ValidationFilter) (map[string][]ports.ValidationView, error) {
	return f(ids, vf)
}
func (f notesFn) Notifications(_ context.Context, ids []string, nf ports.NotificationFilter) (map[string][]ports.NotificationView, error) {
	return f(ids, nf)
}
func (f noteCountFn) NotificationCounts(_ context.Context, ids []string) (map[string]ports.NotificationCounts, error) {
	return f(ids)
}
func (f subsFn) SubSteps(_ context.Context, keys []ports.StepKey) (map[ports.StepKey][]ports.SubStepView, error) {
	return f(keys)
}
func (f historiesFn) StepHistories(_ context.Context, keys []ports.StepKey, hf ports.HistoryFilter) (map[ports.StepKey][]ports.ActivityView, error) {
	return f(keys, hf)
}
func (f latestFn) LatestValidations(_ context.Context, keys []ports.StepKey) (map[ports.StepKey]ports.ValidationView, error) {
	return f(keys)
}
func (f historyFn) History(_ context.Context, key ports.StepKey, hf ports.HistoryFilter) ([]ports.ActivityView, error) {
	return f(key, hf)
}
func (f issueKeysFn) IssueKeys(_ context.Context, refs []ports.IssueRef) (map[string]string, error) {
	return f(refs)
}
func (f rowsFn) GetThreads(_ context.Context, ids []string) ([]ports.ThreadView, error) {
	return f(ids)
}
func (f contractFn) GetContract(_ context.Context, name string, version int) (domain.Contract, error) {
	return f(name, version)
}

// perThreadCase runs one per-thread loader over ids and returns the ids its
// port was asked for (nil: the port was not called).
type perThreadCase struct {
	name string
	run  func(ctx context.Context, sc readmodel.Scope, ids []string, seen *[]string) (int, error)
}

func perThreadCases() []perThreadCase {
	rec := func(seen *[]string, ids []string) { *seen = append([]string{}, ids...) }
	return []perThreadCase{
		{"Refs", func(ctx context.Context, sc readmodel.Scope, ids []string, seen *[]string) (int, error) {
			m, err := readmodel.NewRefsHandler(refsFn(func(ids []string) (map[string]map[string]string, error) {
				rec(seen, ids)
				return map[string]map[string]string{ids[0]: {"k": "v"}}, nil
			}), sc).Handle(ctx, ids)
			return len(m), err
		}},
		{"Counts", func(ctx context.Context, sc readmodel.Scope, ids []string, seen *[]string) (int, error) {
			m, err := readmodel.NewCountsHandler(countsFn(func(ids []string) (map[string]ports.ThreadCounts, error) {
				rec(seen, ids)
				return map[string]ports.ThreadCounts{ids[0]: {}}, nil
			}), sc).Handle(ctx, ids)
			return len(m), err
		}},
		{"Steps", func(ctx context.Context, sc readmodel.Scope, ids []string, seen *[]string) (int, error) {
			m, err := readmodel.NewStepsHandler(stepsFn(func(ids []string, _ ports.StepFilter, _ int) (map[string][]ports.StepView, error) {
				rec(seen, ids)
				return map[string][]ports.StepView{ids[0]: nil}, nil
			}), sc).Handle(ctx, ids, readmodel.StepSelection{})
			return len(m), err
		}},
		{"Attempts", func(ctx context.Context, sc readmodel.Scope, ids []string, seen *[]string) (int, error) {
			m, err := readmodel.NewAttemptsHandler(attemptsFn(func(ids []string, _, _ int) (map[string][]ports.ActivityView, error) {
				rec(seen, ids)
				return map[string][]ports.ActivityView{ids[0]: nil}, nil
			}), sc).Handle(ctx, ids, nil, nil)
			return len(m), err
		}},
		{"StepGroups", func(ctx context.Context, sc readmodel.Scope, ids []string, seen *[]string) (int, error) {
			m, err := readmodel.NewStepGroupsHandler(groupsFn(func(ids []string, _ int) (map[string][]ports.StepGroupView, error) {
				rec(seen, ids)
				return map[string][]ports.StepGroupView{ids[0]: nil}, nil
			}), sc).Handle(ctx, ids)
			return len(m), err
		}},
		{"StepEdges", func(ctx context.Context, sc readmodel.Scope, ids []string, seen *[]string) (int, error) {
			m, err := readmodel.NewStepEdgesHandler(edgesFn(func(ids []string, _ int) (map[string][]ports.StepEdgeView, error) {
				rec(seen, ids)
				return map[string][]ports.StepEdgeView{ids[0]: nil}, nil
			}), sc).Handle(ctx, ids)
			return len(m), err
		}},
		{"Validations", func(ctx context.Context, sc readmodel.Scope, ids []string, seen *[]string) (int, error) {
			m, err := readmodel.NewValidationsHandler(valsFn(func(ids []string, _ ports.ValidationFilter) (map[string][]ports.ValidationView, error) {
				rec(seen, ids)
				return map[string][]ports.ValidationView{ids[0]: nil}, nil
			}), sc).Handle(ctx, ids, readmodel.ValidationArgs{})
			return len(m), err
		}},
		{"Notifications", func(ctx context.Context, sc readmodel.Scope, ids []string, seen *[]string) (int, error) {
			m, err := readmodel.NewNotificationsHandler(notesFn(func(ids []string, _ ports.NotificationFilter) (map[string][]ports.NotificationView, error) {
				rec(seen, ids)
				return map[string][]ports.NotificationView{ids[0]: nil}, nil
			}), sc).Handle(ctx, ids, readmodel.NotificationArgs{})
			return len(m), err
		}},
		{"NotificationCounts", func(ctx context.Context, sc readmodel.Scope, ids []string, seen *[]string) (int, error) {
			m, err := readmodel.NewNotificationCountsHandler(noteCountFn(func(ids []string) (map[string]ports.NotificationCounts, error) {
				rec(seen, ids)
				return map[string]ports.NotificationCounts{ids[0]: {}}, nil
			}), sc).Handle(ctx, ids)
			return len(m), err
		}},
	}
}

// TestPerThreadLoadersReadThroughTheScope: a party-scoped caller's loaders
// ask their port only for the threads it is a party of (and nothing at all
// when it sees none); a human's ask for every valid id, without asking
// which threads it is a party of; a caller without a principal is refused
// before any read.
func TestPerThreadLoadersReadThroughTheScope(t *testing.T) {
	for _, c := range perThreadCases() {
		t.Run(c.name, func(t *testing.T) {
			sc, p := scopeOf("a", "c")
			var seen []string
			if _, err := c.run(as(partySA), sc, []string{"a", "b", "c", "a"}, &seen); err != nil || !slices.Equal(seen, []string{"a", "c", "a"}) {
				t.Errorf("party-scoped: port asked %v (%v), want [a c a]", seen, err)
			}
			if p.asked != (ports.PartyOf{PrincipalID: "sa1", Now: now}) {
				t.Errorf("party asked as %+v", p.asked)
			}
			seen = nil
			n, err := c.run(as(partySA), sc, []string{"b"}, &seen)
			if err != nil || seen != nil || n != 0 {
				t.Errorf("party-scoped, nothing visible: port asked %v, %d rows, %v; want no read", seen, n, err)
			}
			sc, p = scopeOf()
			seen = nil
			if _, err := c.run(as(human), sc, []string{"a", "b", "bad\x00id"}, &seen); err != nil || !slices.Equal(seen, []string{"a", "b"}) || p.calls != 0 {
				t.Errorf("human: port asked %v (%v), %d party reads; want [a b] and none", seen, err, p.calls)
			}
			seen = nil
			if _, err := c.run(context.Background(), sc, []string{"a"}, &seen); domain.KindOf(err) != domain.KindUnauthenticated || seen != nil {
				t.Errorf("no principal: %v, port asked %v", err, seen)
			}
		})
	}
}

// TestPerStepLoadersReadThroughTheScope: the step-keyed loaders keep the
// steps of visible threads only.
func TestPerStepLoadersReadThroughTheScope(t *testing.T) {
	keys := []ports.StepKey{{ThreadID: "a", StepName: "s"}, {ThreadID: "b", StepName: "s"}, {ThreadID: "a", StepName: "t"}}
	want := []ports.StepKey{keys[0], keys[2]}
	var seen []ports.StepKey
	rec := func(k []ports.StepKey) { seen = append([]ports.StepKey{}, k...) }
	runs := map[string]func(context.Context, readmodel.Scope) error{
		"SubSteps": func(ctx context.Context, sc readmodel.Scope) error {
			_, err := readmodel.NewSubStepsHandler(subsFn(func(k []ports.StepKey) (map[ports.StepKey][]ports.SubStepView, error) {
				rec(k)
				return nil, nil
			}), sc).Handle(ctx, keys)
			return err
		},
		"StepHistories": func(ctx context.Context, sc readmodel.Scope) error {
			_, err := readmodel.NewStepHistoriesHandler(historiesFn(func(k []ports.StepKey, _ ports.HistoryFilter) (map[ports.StepKey][]ports.ActivityView, error) {
				rec(k)
				return nil, nil
			}), sc).Handle(ctx, keys, readmodel.HistoryArgs{})
			return err
		},
		"LatestValidations": func(ctx context.Context, sc readmodel.Scope) error {
			_, err := readmodel.NewLatestValidationsHandler(latestFn(func(k []ports.StepKey) (map[ports.StepKey]ports.ValidationView, error) {
				rec(k)
				return nil, nil
			}), sc).Handle(ctx, keys)
			return err
		},
	}
	for name, run := range runs {
		sc, _ := scopeOf("a")
		seen = nil
		if err := run(as(partySA), sc); err != nil || !reflect.DeepEqual(seen, want) {
			t.Errorf("%s party-scoped: port asked %v (%v), want %v", name, seen, err, want)
		}
		seen = nil
		if err := run(as(human), sc); err != nil || !reflect.DeepEqual(seen, keys) {
			t.Errorf("%s human: port asked %v (%v), want every key", name, seen, err)
		}
	}
}

func TestThreadsKeepTheOrderAskedAndDropInvisible(t *testing.T) {
	rows := rowsFn(func(ids []string) ([]ports.ThreadView, error) {
		var out []ports.ThreadView
		for _, id := range ids {
			if id != "gone" {
				out = append([]ports.ThreadView{{ID: id}}, out...) // any order
			}
		}
		return out, nil
	})
	sc, _ := scopeOf("a", "c", "gone")
	h := readmodel.NewThreadsHandler(rows, sc)
	ids := func(ts []ports.ThreadView) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.ID)
		}
		return out
	}
	if got, err := h.Handle(as(human), []string{"c", "gone", "b", "a"}); err != nil || !slices.Equal(ids(got), []string{"c", "b", "a"}) {
		t.Errorf("human: %v %v", ids(got), err)
	}
	if got, err := h.Handle(as(partySA), []string{"c", "b", "a"}); err != nil || !slices.Equal(ids(got), []string{"c", "a"}) {
		t.Errorf("party-scoped: %v %v", ids(got), err)
	}
	one := readmodel.NewThreadHandler(h)
	if got, err := one.Handle(as(partySA), "b"); got != nil || err != nil {
		t.Errorf("invisible thread: %v %v, want nil, nil", got, err)
	}
}

// chainStore answers a chain a → b → c and the rows of every thread.
type chainStore struct{ rowsFn }

func (chainStore) Chains(_ context.Context, roots []string, depth, limit int) (map[string][]ports.ChainLink, error) {
	out := map[string][]ports.ChainLink{}
	for _, r := range roots {
		out[r] = []ports.ChainLink{{RootID: r, ThreadID: r, Depth: 1}, {RootID: r, ThreadID: "b", Depth: 2}, {RootID: r, ThreadID: "c", Depth: 3}}
	}
	return out, nil
}

func (chainStore) LinkedFrom(_ context.Context, ids []string, limit int) (map[string][]string, error) {
	out := map[string][]string{}
	for _, id := range ids {
		out[id] = []string{"b", "c"}
	}
	return out, nil
}

func allRows(ids []string) ([]ports.ThreadView, error) {
	out := make([]ports.ThreadView, len(ids))
	for i, id := range ids {
		out[i] = ports.ThreadView{ID: id}
	}
	return out, nil
}

// TestLinksThroughAnInvisibleThread: a chain through a thread the caller may
// not see still reaches the visible threads beyond it; links from an
// invisible thread are dropped.
func TestLinksThroughAnInvisibleThread(t *testing.T) {
	sc, _ := scopeOf("a", "c")
	st := chainStore{rowsFn(allRows)}
	chains := readmodel.NewThreadChainsHandler(st, sc)
	m, err := chains.Handle(as(partySA), []string{"a", "b"}, nil)
	if err != nil || len(m["a"]) != 2 || m["a"][0].ID != "a" || m["a"][1].ID != "c" || len(m["b"]) != 0 {
		t.Errorf("chains: %+v %v", m, err)
	}
	for _, d := range []int{0, domain.MaxChainDepth + 1} {
		if _, err := chains.Handle(as(human), []string{"a"}, &d); domain.KindOf(err) != domain.KindInvalid {
			t.Errorf("maxDepth %d: %v", d, err)
		}
	}
	linked, err := readmodel.NewLinkedFromHandler(st, sc).Handle(as(partySA), []string{"a", "b"})
	if err != nil || len(linked["a"]) != 1 || linked["a"][0].ID != "c" || linked["b"] == nil || len(linked["b"]) != 0 {
		t.Errorf("linkedFrom: %+v %v", linked, err)
	}
}

func TestIssueKeysAskOnlyVisibleThreadsWithAnIssue(t *testing.T) {
	var asked []ports.IssueRef
	h := readmodel.NewIssueKeysHandler(issueKeysFn(func(refs []ports.IssueRef) (map[string]string, error) {
		asked = refs
		return map[string]string{}, nil
	}), func() readmodel.Scope { sc, _ := scopeOf("a", "b"); return sc }())
	issue := func(typ string) domain.ThreadHealth {
		return domain.ThreadHealth{FirstIssue: &domain.HealthIssue{Type: typ, StepName: "s"}}
	}
	threads := []ports.ThreadView{{ID: "a", Health: issue(domain.IssueStepFailed)}, {ID: "b"}, {ID: "c", Health: issue("x")}}
	if _, err := h.Handle(as(partySA), threads); err != nil || !reflect.DeepEqual(asked, []ports.IssueRef{{ThreadID: "a", StepName: "s", Failed: true}}) {
		t.Errorf("asked %+v %v", asked, err)
	}
	asked = nil
	if m, err := h.Handle(as(human), threads[1:2]); err != nil || asked != nil || m == nil {
		t.Errorf("no issue: asked %+v, %v %v", asked, m, err)
	}
}

func TestStepHistoryArgumentsAndScope(t *testing.T) {
	called := 0
	h := readmodel.NewStepHistoryHandler(historyFn(func(ports.StepKey, ports.HistoryFilter) ([]ports.ActivityView, error) {
		called++
		return nil, nil
	}), func() readmodel.Scope { sc, _ := scopeOf("a"); return sc }())
	for _, a := range []readmodel.HistoryArgs{{StepName: "s"}, {ThreadID: "a"}, {ThreadID: "a", StepName: "s", StartAt: "yesterday"}} {
		if _, err := h.Handle(as(human), a); domain.KindOf(err) != domain.KindInvalid {
			t.Errorf("%+v: %v", a, err)
		}
	}
	out, err := h.Handle(as(partySA), readmodel.HistoryArgs{ThreadID: "b", StepName: "s"})
	if err != nil || out == nil || len(out) != 0 || called != 0 {
		t.Errorf("invisible thread: %v %v (%d reads), want [] and no read", out, err, called)
	}
	if out, err := h.Handle(as(partySA), readmodel.HistoryArgs{ThreadID: "a", StepName: "s"}); err != nil || out == nil || called != 1 {
		t.Errorf("visible thread: %v %v (%d reads)", out, err, called)
	}
}

func TestValidationResultsOfOneThread(t *testing.T) {
	sc, _ := scopeOf()
	h := readmodel.NewValidationResultsHandler(readmodel.NewValidationsHandler(valsFn(func(ids []string, f ports.ValidationFilter) (map[string][]ports.ValidationView, error) {
		if f.Limit != domain.ValidationsPage.Default || f.StepName != "s" {
			t.Errorf("filter %+v", f)
		}
		return map[string][]ports.ValidationView{}, nil
	}), sc))
	if out, err := h.Handle(as(human), "a", readmodel.ValidationArgs{StepName: "s"}); err != nil || out == nil || len(out) != 0 {
		t.Errorf("%v %v, want []", out, err)
	}
}

func TestContractDiff(t *testing.T) {
	contracts := contractFn(func(name string, version int) (domain.Contract, error) {
		if version == 9 {
			return domain.Contract{}, domain.NotFound("contract")
		}
		c := domain.Contract{Name: name, Version: version}
		for i := range version {
			c.Steps = append(c.Steps, domain.ContractStep{Name: string(rune('a' + i))})
		}
		return c, nil
	})
	h := readmodel.NewContractDiffHandler(readmodel.NewContractHandler(contracts))
	d, err := h.Handle(as(human), "order", 1, 2)
	if err != nil || !reflect.DeepEqual(d, domain.DiffContracts(domain.Contract{Name: "order", Version: 1, Steps: []domain.ContractStep{{Name: "a"}}},
		domain.Contract{Name: "order", Version: 2, Steps: []domain.ContractStep{{Name: "a"}, {Name: "b"}}})) {
		t.Errorf("%+v %v", d, err)
	}
	if _, err := h.Handle(as(human), "order", 1, 9); domain.KindOf(err) != domain.KindNotFound {
		t.Errorf("missing version: %v", err)
	}
	if _, err := readmodel.NewContractHandler(nil).Handle(as(human), "order", 0); domain.KindOf(err) != domain.KindNotFound {
		t.Errorf("no contracts: %v", err)
	}
}

// detailStore is every port ThreadDetail's parts read, each answering
// one row for the thread asked.
type detailStore struct {
	rowsFn
	refsFn
	stepsFn
	valsFn
	notesFn
	noteCountFn
}

func (detailStore) ListThreads(_ context.Context, f ports.ThreadFilter) ([]ports.ThreadView, error) {
	if f.RefValue != "r" {
		return nil, nil
	}
	// Three match, as CountThreads says.
	return []ports.ThreadView{{ID: "a"}, {ID: "a2"}, {ID: "a3"}}[:min(3, f.Limit)], nil
}

func (detailStore) CountThreads(_ context.Context, f ports.ThreadFilter, upTo int) (int, error) {
	if f.RefValue != "r" {
		return 0, nil
	}
	return 3, nil
}

func (detailStore) Chains(_ context.Context, roots []string, depth, limit int) (map[string][]ports.ChainLink, error) {
	return map[string][]ports.ChainLink{roots[0]: {{ThreadID: roots[0]}, {ThreadID: "b"}}}, nil
}

func TestThreadDetailReadsThePartsAsked(t *testing.T) {
	one := func(ids []string) string { return ids[0] }
	st := detailStore{
		rowsFn: allRows,
		refsFn: func(ids []string) (map[string]map[string]string, error) {
			return map[string]map[string]string{one(ids): {"k": "r"}}, nil
		},
		stepsFn: func(ids []string, _ ports.StepFilter, _ int) (map[string][]ports.StepView, error) {
			return map[string][]ports.StepView{one(ids): {{}}}, nil
		},
		valsFn: func(ids []string, _ ports.ValidationFilter) (map[string][]ports.ValidationView, error) {
			return map[string][]ports.ValidationView{one(ids): {{}}}, nil
		},
		notesFn: func(ids []string, _ ports.NotificationFilter) (map[string][]ports.NotificationView, error) {
			return map[string][]ports.NotificationView{one(ids): {{}}}, nil
		},
		noteCountFn: func(ids []string) (map[string]ports.NotificationCounts, error) {
			return map[string]ports.NotificationCounts{one(ids): {Total: 4}}, nil
		},
	}
	sc, _ := scopeOf()
	threads := readmodel.NewThreadsHandler(st, sc)
	search := readmodel.NewSearchThreadsHandler(st, sc)
	h := readmodel.NewThreadDetailHandler(readmodel.NewLocateHandler(readmodel.NewThreadHandler(threads), search),
		readmodel.NewRefsHandler(st, sc), readmodel.NewStepsHandler(st, sc), readmodel.NewValidationsHandler(st, sc),
		readmodel.NewNotificationsHandler(st, sc), readmodel.NewNotificationCountsHandler(st, sc), readmodel.NewThreadChainsHandler(st, sc))
	d, err := h.Handle(as(human), readmodel.ThreadDetailArgs{ThreadLocator: readmodel.ThreadLocator{RefValue: "r"},
		Parts: readmodel.AllDetailParts(5, 5, 2)})
	if err != nil || d.Thread.ID != "a" || d.OtherMatches != 2 || d.Refs["k"] != "r" || len(d.Steps) != 1 || len(d.Validations) != 1 ||
		len(d.Notifications) != 1 || d.NotificationCounts.Total != 4 || len(d.Linked) != 1 || d.Linked[0].ID != "b" {
		t.Errorf("every part: %+v %v", d, err)
	}
	d, err = h.Handle(as(human), readmodel.ThreadDetailArgs{Located: &ports.ThreadView{ID: "z"}})
	if err != nil || d.Thread.ID != "z" || d.Refs != nil || d.Steps != nil || d.Linked != nil {
		t.Errorf("no parts: %+v %v", d, err)
	}
	for _, l := range []readmodel.ThreadLocator{{}, {ThreadID: "a", RefValue: "r"}, {RefKey: "k"}} {
		if _, err := h.Handle(as(human), readmodel.ThreadDetailArgs{ThreadLocator: l}); domain.KindOf(err) != domain.KindInvalid {
			t.Errorf("%+v: %v, want invalid", l, err)
		}
	}
	if _, err := h.Handle(as(human), readmodel.ThreadDetailArgs{ThreadLocator: readmodel.ThreadLocator{RefValue: "none"}}); domain.KindOf(err) != domain.KindNotFound {
		t.Errorf("unmatched reference: %v", err)
	}
}

// TestVerifyThreadOfAnInvisibleThreadIsNotFound: verification reads through
// the scope, so a thread the caller may not see is not found.
func TestVerifyThreadOfAnInvisibleThreadIsNotFound(t *testing.T) {
	st := verifyStore{rowsFn(allRows)}
	sc, _ := scopeOf("a")
	h := readmodel.NewVerifyThreadHandler(readmodel.NewVerifyThreadsHandler(st, integrityChecker(), sc))
	if _, err := h.Handle(as(partySA), "b"); domain.KindOf(err) != domain.KindNotFound {
		t.Errorf("invisible: %v, want not found", err)
	}
	if _, err := h.Handle(context.Background(), "a"); !errors.Is(err, domain.ErrUnauthenticated) && domain.KindOf(err) != domain.KindUnauthenticated {
		t.Errorf("no principal: %v", err)
	}
}

// verifyStore is integrity.Reader over threads with no attempts.
type verifyStore struct{ rowsFn }

func (verifyStore) Activities(context.Context, []string) (map[string][]ports.ActivityView, error) {
	return map[string][]ports.ActivityView{}, nil
}

func (verifyStore) SubSteps(context.Context, []ports.StepKey) (map[ports.StepKey][]ports.SubStepView, error) {
	return map[ports.StepKey][]ports.SubStepView{}, nil
}

func integrityChecker() integrity.Checker {
	return integrity.Checker{Keys: domain.ChainKeyring{Secrets: readmodel.ChainSecrets([]byte("secret"))}}
}

// TestSearchIsLimitedToTheCallersThreads: a party-scoped caller's search and
// its count carry the party filter; a human's carry none.
func TestSearchIsLimitedToTheCallersThreads(t *testing.T) {
	sc, _ := scopeOf()
	st := &listStore{n: 3}
	if _, err := readmodel.NewSearchThreadsHandler(st, sc).Handle(as(partySA), readmodel.ThreadSearch{}); err != nil ||
		st.filter.Party == nil || *st.filter.Party != (ports.PartyOf{PrincipalID: "sa1", Now: now}) {
		t.Errorf("party-scoped search: filter %+v %v", st.filter.Party, err)
	}
	if _, err := readmodel.NewSearchThreadsHandler(st, sc).Handle(as(human), readmodel.ThreadSearch{}); err != nil || st.filter.Party != nil {
		t.Errorf("human search: filter %+v %v", st.filter.Party, err)
	}
	counter := &partyCounter{}
	if got, err := readmodel.NewCountThreadsHandler(counter, sc).Handle(as(partySA), readmodel.ThreadSearch{After: "x", Offset: new(int)}); err != nil ||
		counter.party == nil || got != (readmodel.Total{Count: 2, Exact: true}) {
		t.Errorf("party-scoped count: %+v %v (party %v)", got, err, counter.party)
	}
}

// partyCounter is ThreadCounter only.
type partyCounter struct{ party *ports.PartyOf }

func (c *partyCounter) CountThreads(_ context.Context, f ports.ThreadFilter, upTo int) (int, error) {
	c.party = f.Party
	return 2, nil
}
