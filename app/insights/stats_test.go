package insights_test

// The engine-wide aggregates over one fake of the statistics ports: no SQL.

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/insights"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

var (
	now     = time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)
	human   = domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleViewer}
	partySA = domain.Principal{Kind: domain.PrincipalServiceAccount, ID: "sa1", Role: domain.RoleViewer, Scope: domain.ScopeParty}
	clock   = fixedClock{}
)

type fixedClock struct{}

func (fixedClock) Now() time.Time { return now }

func as(p domain.Principal) context.Context { return authz.WithPrincipal(context.Background(), p) }

// statsFake answers every statistics port.
type statsFake struct{ since time.Time }

func (*statsFake) ContractStats(context.Context) ([]ports.ContractStat, error) {
	return []ports.ContractStat{{}}, nil
}
func (*statsFake) StepStats(context.Context, string, int) ([]ports.StepStat, error) {
	return []ports.StepStat{{}}, nil
}
func (s *statsFake) Hourly(_ context.Context, since, _ time.Time) ([]ports.HourBucket, error) {
	s.since = since
	return nil, nil
}
func (*statsFake) StepsSince(context.Context, time.Time, int) ([]ports.StepStat, error) {
	return nil, nil
}

// TestStatisticsAreCompanyWide: the aggregates count every thread, so a
// party-scoped caller is refused, and without a store they are not found.
func TestStatisticsAreCompanyWide(t *testing.T) {
	st := &statsFake{}
	hours := 3
	runs := map[string]func(ctx context.Context, st *statsFake) error{
		"ContractStats": func(ctx context.Context, st *statsFake) error {
			var r insights.ContractStatsReader
			if st != nil {
				r = st
			}
			_, err := insights.NewContractStatsHandler(r).Handle(ctx)
			return err
		},
		"StepStats": func(ctx context.Context, st *statsFake) error {
			var r insights.StepStatsReader
			if st != nil {
				r = st
			}
			_, err := insights.NewStepStatsHandler(r).Handle(ctx, "order", 0)
			return err
		},
		"Overview": func(ctx context.Context, st *statsFake) error {
			var r insights.OverviewReader
			if st != nil {
				r = st
			}
			_, err := insights.NewOverviewHandler(r, clock).Handle(ctx, &hours, nil)
			return err
		},
	}
	names := make([]string, 0, len(runs))
	for n := range runs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		run := runs[n]
		if err := run(as(human), st); err != nil {
			t.Errorf("%s human: %v", n, err)
		}
		if err := run(as(partySA), st); domain.KindOf(err) != domain.KindForbidden {
			t.Errorf("%s party-scoped: %v, want forbidden", n, err)
		}
		if err := run(as(human), nil); domain.KindOf(err) != domain.KindNotFound {
			t.Errorf("%s without a store: %v, want not found", n, err)
		}
	}
	if want := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC); !st.since.Equal(want) {
		t.Errorf("overview of 3 hours starts at %v, want %v", st.since, want)
	}
}
