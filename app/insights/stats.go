package insights

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

// ContractStatsReader counts threads per contract version.
type ContractStatsReader interface {
	ContractStats(ctx context.Context) ([]ports.ContractStat, error)
}

// ContractStatsHandler counts threads per contract version by status and
// health (an engine-wide aggregate: a party-scoped service account may not
// read it).
type ContractStatsHandler struct {
	stats ContractStatsReader // nil: not found
}

// NewContractStatsHandler builds the ContractStats query (stats may be nil).
func NewContractStatsHandler(stats ContractStatsReader) ContractStatsHandler {
	return ContractStatsHandler{stats: stats}
}

// Handle counts threads per contract version.
func (h ContractStatsHandler) Handle(ctx context.Context) ([]ports.ContractStat, error) {
	if err := companyWide(ctx); err != nil {
		return nil, err
	}
	if h.stats == nil {
		return nil, domain.NotFound("statistics")
	}
	return h.stats.ContractStats(ctx)
}

// StepStatsReader counts a contract version's steps.
type StepStatsReader interface {
	// StepStats counts the steps of one contract version (version 0: all).
	StepStats(ctx context.Context, contractName string, version int) ([]ports.StepStat, error)
}

// StepStatsHandler counts a contract version's steps (engine-wide).
type StepStatsHandler struct {
	stats StepStatsReader // nil: not found
}

// NewStepStatsHandler builds the StepStats query (stats may be nil).
func NewStepStatsHandler(stats StepStatsReader) StepStatsHandler {
	return StepStatsHandler{stats: stats}
}

// Handle counts the steps of contract name at version (0: every version).
func (h StepStatsHandler) Handle(ctx context.Context, name string, version int) ([]ports.StepStat, error) {
	if err := companyWide(ctx); err != nil {
		return nil, err
	}
	if name == "" {
		return nil, domain.Invalid("contractName", "contractName is required")
	}
	if h.stats == nil {
		return nil, domain.NotFound("statistics")
	}
	return h.stats.StepStats(ctx, name, version)
}

// OverviewReader reads the hourly buckets and the worst steps of a window.
type OverviewReader interface {
	// Hourly returns one bucket per UTC hour from since to until.
	Hourly(ctx context.Context, since, until time.Time) ([]ports.HourBucket, error)
	// StepsSince counts attempts and validations per (contract, step) since
	// a time, worst first, at most limit rows.
	StepsSince(ctx context.Context, since time.Time, limit int) ([]ports.StepStat, error)
}

// OverviewHandler answers the overview page (engine-wide).
type OverviewHandler struct {
	stats OverviewReader // nil: not found
	clock ports.Clock
}

// NewOverviewHandler builds the Overview query (stats may be nil).
func NewOverviewHandler(stats OverviewReader, clock ports.Clock) OverviewHandler {
	return OverviewHandler{stats: stats, clock: clock}
}

// Handle returns the last hours (1..MaxOverviewHours, default 24) by hour
// and the worst steps in that window (at most limit, default 10, max 50).
func (h OverviewHandler) Handle(ctx context.Context, hours, limit *int) (Overview, error) {
	if err := companyWide(ctx); err != nil {
		return Overview{}, err
	}
	hs := 24
	if hours != nil {
		hs = *hours
	}
	if hs < 1 || hs > MaxOverviewHours {
		return Overview{}, domain.Invalid("hours", "hours must be between 1 and %d", MaxOverviewHours)
	}
	n := domain.PageSize{Default: 10, Max: 50}.Effective(limit)
	if h.stats == nil {
		return Overview{}, domain.NotFound("statistics")
	}
	now := h.clock.Now().UTC()
	since := now.Add(-time.Duration(hs-1) * time.Hour).Truncate(time.Hour)
	out := Overview{}
	var err error
	if out.Hours, err = h.stats.Hourly(ctx, since, now); err != nil {
		return Overview{}, err
	}
	if out.Steps, err = h.stats.StepsSince(ctx, since, n); err != nil {
		return Overview{}, err
	}
	return out, nil
}
