package insights_test

import (
	"context"
	"testing"
	"time"

	"github.com/threadengine/engine/app/insights"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// problemRows is ports.ProblemReads answering fixed rows.
type problemRows struct {
	rows        []ports.ProblemRow
	since, till time.Time
	bucket      time.Duration
}

func (p *problemRows) ProblemRows(_ context.Context, since, until time.Time, bucket time.Duration, _ int) ([]ports.ProblemRow, error) {
	p.since, p.till, p.bucket = since, until, bucket
	return p.rows, nil
}

// TestProblemsGroupByCauseBiggestFirst: rows of one cause are summed into
// its trend bucket, groups come biggest first, and the window is whole
// hours ending after the current one.
func TestProblemsGroupByCauseBiggestFirst(t *testing.T) {
	until := time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)
	since := until.Add(-24 * time.Hour)
	st := &problemRows{rows: []ports.ProblemRow{
		{ContractName: "order", ContractVersion: 1, Rule: "r", Step: "pay", Start: since, Count: 1, Example: "t1"},
		{ContractName: "order", ContractVersion: 1, Rule: "r", Step: "pay", Start: since.Add(22 * time.Hour), Count: 2, Example: "t3"},
		{Step: "ship", MessageClass: "timeout", Start: since.Add(4 * time.Hour), Count: 4, Example: "t2"},
	}}
	r, err := insights.NewProblemsHandler(st, clock).Handle(as(human), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !st.since.Equal(since) || !st.till.Equal(until) || st.bucket != 2*time.Hour || r.BucketHours != 2 || len(r.Buckets) != insights.ProblemBuckets {
		t.Errorf("window %v..%v by %v, report %+v", st.since, st.till, st.bucket, r)
	}
	if r.Total != 7 || len(r.Groups) != 2 || r.Groups[0].Step != "ship" || r.Groups[0].Count != 4 || r.Groups[0].Trend[2] != 4 ||
		r.Groups[1].Count != 3 || r.Groups[1].Trend[0] != 1 || r.Groups[1].Trend[11] != 2 || r.Groups[1].Example != "t3" {
		t.Errorf("groups %+v, total %d", r.Groups, r.Total)
	}
	for _, h := range []int{0, insights.MaxProblemHours + 1} {
		if _, err := insights.NewProblemsHandler(st, clock).Handle(as(human), &h); domain.KindOf(err) != domain.KindInvalid {
			t.Errorf("hours %d: %v", h, err)
		}
	}
	if _, err := insights.NewProblemsHandler(st, clock).Handle(as(partySA), nil); domain.KindOf(err) != domain.KindForbidden {
		t.Errorf("party-scoped: %v", err)
	}
	if _, err := insights.NewProblemsHandler(nil, clock).Handle(as(human), nil); domain.KindOf(err) != domain.KindNotFound {
		t.Errorf("no store: %v", err)
	}
}

// mapRows is ports.ProcessMapReads answering fixed rows.
type mapRows struct {
	rows        []ports.ProcessMapRow
	since, till time.Time
}

func (m *mapRows) ProcessMapRows(_ context.Context, _ string, _ int, since, until time.Time) ([]ports.ProcessMapRow, error) {
	m.since, m.till = since, until
	return m.rows, nil
}

type oneContract struct{ c domain.Contract }

func (o oneContract) GetContract(context.Context, string, int) (domain.Contract, error) {
	return o.c, nil
}

// TestProcessMapJudgesEdgesAgainstTheContract: nodes follow the contract's
// steps (a step no thread reached is listed as never reached), an edge the
// contract does not allow is marked so, and the window widens to whole
// hours.
func TestProcessMapJudgesEdgesAgainstTheContract(t *testing.T) {
	c := domain.Contract{Name: "order", Version: 1, EntryPoints: []string{"a"},
		Steps:       []domain.ContractStep{{Name: "a"}, {Name: "b"}, {Name: "c"}},
		Transitions: []domain.Transition{{From: "a", To: []string{"b"}}}}
	st := &mapRows{rows: []ports.ProcessMapRow{
		{Kind: "N", To: "a", Bucket: 3, Count: 5}, {Kind: "N", To: "b", Bucket: 3, Count: 2},
		{Kind: "E", From: "", To: "a", Bucket: -1, Count: 5}, {Kind: "E", From: "a", To: "b", Bucket: 3, Count: 2},
		{Kind: "E", From: "b", To: "a", Bucket: 3, Count: 1, Example: "t9"},
	}}
	pm, err := insights.NewProcessMapHandler(st, oneContract{c}, clock).Handle(as(human), "order", 0, "2026-03-01T10:15:00Z", "")
	if err != nil {
		t.Fatal(err)
	}
	if !st.since.Equal(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)) || !st.till.Equal(time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)) {
		t.Errorf("window %v..%v", st.since, st.till)
	}
	if pm.Started != 5 || len(pm.Nodes) != 2 || len(pm.NeverReached) != 1 || pm.NeverReached[0] != "c" {
		t.Errorf("map %+v", pm)
	}
	allowed := map[[2]string]bool{}
	for _, e := range pm.Edges {
		allowed[[2]string{e.From, e.To}] = e.Allowed
	}
	if !allowed[[2]string{"a", "b"}] || allowed[[2]string{"b", "a"}] {
		t.Errorf("edges %+v", pm.Edges)
	}
	if _, err := insights.NewProcessMapHandler(st, oneContract{c}, clock).Handle(as(human), "order", 0, "2026-03-01", "2026-02-01"); domain.KindOf(err) != domain.KindInvalid {
		t.Errorf("from after to: %v", err)
	}
	if _, err := insights.NewProcessMapHandler(nil, oneContract{c}, clock).Handle(as(human), "order", 0, "", ""); domain.KindOf(err) != domain.KindNotFound {
		t.Errorf("no store: %v", err)
	}
}
