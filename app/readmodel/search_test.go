package readmodel_test

import (
	"context"
	"testing"
	"time"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/readmodel"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// listStore answers a search with n matching threads, in order.
type listStore struct {
	ports.ThreadQueries
	n      int
	upTo   int
	filter ports.ThreadFilter
}

func (s *listStore) CountThreads(_ context.Context, _ ports.ThreadFilter, upTo int) (int, error) {
	s.upTo = upTo
	return min(s.n, upTo), nil
}

func (s *listStore) ListThreads(_ context.Context, f ports.ThreadFilter) ([]ports.ThreadView, error) {
	s.filter = f
	var out []ports.ThreadView
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := f.Offset; i < s.n && len(out) < f.Limit; i++ {
		out = append(out, ports.ThreadView{ID: string(rune('a' + i%26)), CreatedAt: base.Add(-time.Duration(i) * time.Second)})
	}
	return out, nil
}

func TestSearchTotalsAndCursors(t *testing.T) {
	ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleAdmin})
	for _, c := range []struct {
		n    int
		want readmodel.Total
	}{{0, readmodel.Total{Exact: true}}, {7, readmodel.Total{Count: 7, Exact: true}},
		{readmodel.MaxTotalCount, readmodel.Total{Count: readmodel.MaxTotalCount, Exact: true}},
		{readmodel.MaxTotalCount + 1, readmodel.Total{Count: readmodel.MaxTotalCount}},
		{5_000_000, readmodel.Total{Count: readmodel.MaxTotalCount}}} {
		st := &listStore{n: c.n}
		got, err := readmodel.New(readmodel.Deps{Store: st}).Count.Handle(ctx, readmodel.ThreadSearch{})
		if err != nil || got != c.want || st.upTo != readmodel.MaxTotalCount+1 {
			t.Errorf("%d matching: %+v %v (counted up to %d), want %+v", c.n, got, err, st.upTo, c.want)
		}
	}
	// A first page with every match is the total; otherwise it is counted.
	for _, n := range []int{0, 3, 50, 51} {
		st := &listStore{n: n}
		page, err := readmodel.New(readmodel.Deps{Store: st}).Search.Handle(ctx, readmodel.ThreadSearch{WithTotal: true})
		counted := n > 50
		if err != nil || page.Total != (readmodel.Total{Count: n, Exact: true}) || (st.upTo != 0) != counted {
			t.Errorf("%d matching, with the total: %+v %v (counted up to %d), want %d counted %v", n, page.Total, err, st.upTo, n, counted)
		}
	}
	st := &listStore{n: 5}
	q := readmodel.New(readmodel.Deps{Store: st})
	two := 2
	page, err := q.Search.Handle(ctx, readmodel.ThreadSearch{Limit: &two})
	if err != nil || len(page.Threads) != 2 || !page.HasNext || page.HasPrevious || page.Total != (readmodel.Total{}) {
		t.Fatalf("first page: %+v %v", page, err)
	}
	// The cursor carries the last thread's position to the store.
	if _, err := q.Search.Handle(ctx, readmodel.ThreadSearch{Limit: &two, After: page.EndCursor}); err != nil ||
		st.filter.After == nil || st.filter.After.ID != "b" || !st.filter.After.CreatedAt.Equal(page.Threads[1].CreatedAt) {
		t.Fatalf("after: %+v %v", st.filter.After, err)
	}
	deep := readmodel.MaxThreadsOffset + 1
	for name, s := range map[string]readmodel.ThreadSearch{
		"another order's cursor": {After: page.EndCursor, OrderBy: ports.OrderDuration},
		"a ref search's cursor":  {Before: page.StartCursor, RefValue: "x"},
		"garbage":                {After: "%%%"},
		"both":                   {After: page.EndCursor, Before: page.StartCursor},
		"deep offset":            {Offset: &deep},
	} {
		if _, err := q.Search.Handle(ctx, s); domain.KindOf(err) != domain.KindInvalid {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
}
