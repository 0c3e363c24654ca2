package ports

import (
	"context"
	"time"
)

// ProblemRow counts unhealthy threads (health FAILED or VIOLATED) started in
// one UTC hour that share a first issue: contract version, rule (issue type
// or step_failed), step, and for free-form threads the message.
type ProblemRow struct {
	ContractName    string // "" for free-form threads
	ContractVersion int
	Rule, Step      string
	Message         string // free-form threads only
	Hour            time.Time
	Count           int
	Example         string // one thread id of the row
}

// ProblemReads reads the causes of unhealthy threads (threads_health_created
// index: health, created_at).
type ProblemReads interface {
	// ProblemRows returns the rows of threads started in [since, until), at
	// most limit rows.
	ProblemRows(ctx context.Context, since, until time.Time, limit int) ([]ProblemRow, error)
}
