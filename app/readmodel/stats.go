package readmodel

import (
	"context"
	"time"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// MaxOverviewHours bounds the overview window (7 days).
const MaxOverviewHours = 168

// Overview is the engine-wide picture over a window: threads per hour and
// the steps that fail or break rules most.
type Overview struct {
	Hours []ports.HourBucket
	Steps []ports.StepStat
}

// Stats are the engine-wide aggregates behind the contracts and overview
// pages: they count every thread, so a party-scoped service account may not
// read them.
type Stats struct {
	stats ports.ThreadStats // nil: the aggregate queries answer not found
	clock ports.Clock
}

// NewStats builds the statistics reads (stats may be nil).
func NewStats(stats ports.ThreadStats, clock ports.Clock) *Stats {
	return &Stats{stats: stats, clock: clock}
}

// companyWide checks threads.read for a principal that sees every thread:
// the aggregates count all of them, so a party-scoped service account, which
// sees only its own threads, may not read them.
func companyWide(ctx context.Context) error {
	p, err := authz.Require(ctx, domain.PermThreadsRead)
	if err != nil {
		return err
	}
	if p.PartyScoped() {
		return domain.Forbidden("statistics count every thread; a party-scoped service account sees only its own threads")
	}
	return nil
}

func (q *Stats) statsStore() (ports.ThreadStats, error) {
	if q.stats == nil {
		return nil, domain.NotFound("statistics")
	}
	return q.stats, nil
}

// ContractStats counts threads per contract version by status and health.
func (q *Stats) ContractStats(ctx context.Context) ([]ports.ContractStat, error) {
	if err := companyWide(ctx); err != nil {
		return nil, err
	}
	st, err := q.statsStore()
	if err != nil {
		return nil, err
	}
	return st.ContractStats(ctx)
}

// StepStats counts a contract version's steps (version 0: every version).
func (q *Stats) StepStats(ctx context.Context, name string, version int) ([]ports.StepStat, error) {
	if err := companyWide(ctx); err != nil {
		return nil, err
	}
	if name == "" {
		return nil, domain.Invalid("contractName", "contractName is required")
	}
	st, err := q.statsStore()
	if err != nil {
		return nil, err
	}
	return st.StepStats(ctx, name, version)
}

// Overview returns the last hours (1..MaxOverviewHours, default 24) by hour
// and the worst steps in that window (at most limit, default 10, max 50).
func (q *Stats) Overview(ctx context.Context, hours, limit *int) (Overview, error) {
	if err := companyWide(ctx); err != nil {
		return Overview{}, err
	}
	h := 24
	if hours != nil {
		h = *hours
	}
	if h < 1 || h > MaxOverviewHours {
		return Overview{}, domain.Invalid("hours", "hours must be between 1 and %d", MaxOverviewHours)
	}
	n := domain.PageSize{Default: 10, Max: 50}.Effective(limit)
	st, err := q.statsStore()
	if err != nil {
		return Overview{}, err
	}
	now := q.clock.Now().UTC()
	since := now.Add(-time.Duration(h-1) * time.Hour).Truncate(time.Hour)
	out := Overview{}
	if out.Hours, err = st.Hourly(ctx, since, now); err != nil {
		return Overview{}, err
	}
	if out.Steps, err = st.StepsSince(ctx, since, n); err != nil {
		return Overview{}, err
	}
	return out, nil
}
