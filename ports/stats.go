package ports

import (
	"context"
	"time"
)

// ContractStat counts one contract version's threads by status and health.
type ContractStat struct {
	Name                                    string
	Version                                 int
	Threads, Active, Completed, Failed      int
	Cancelled, Violated, HealthFailed, Warn int
}

// StepStat counts one step's attempts and how many failed or broke rules.
type StepStat struct {
	ContractName string // "" for free-form threads
	StepName     string
	Attempts     int
	Failed       int // attempts with status failed or error
	Violated     int // validations with a critical or major issue
	Warnings     int // validations with minor or warning issues only
}

// HourBucket is one hour of the overview: threads started, and threads that
// ended completed or failed, in that hour.
type HourBucket struct {
	Start                      time.Time
	Started, Completed, Failed int
}

// ThreadStats are the aggregates behind the contracts and overview pages:
// SQL over indexed columns, the step counts partly from an hourly roll-up
// (see docs/contributors/performance.md).
type ThreadStats interface {
	ContractStats(ctx context.Context) ([]ContractStat, error)
	// StepStats counts the steps of one contract version (version 0: all).
	StepStats(ctx context.Context, contractName string, version int) ([]StepStat, error)
	// Hourly returns one bucket per UTC hour from since to until.
	Hourly(ctx context.Context, since, until time.Time) ([]HourBucket, error)
	// StepsSince counts attempts and validations per (contract, step) since a
	// time, worst first, at most limit rows.
	StepsSince(ctx context.Context, since time.Time, limit int) ([]StepStat, error)
}
