package ports

import (
	"context"
	"time"
)

// ProblemRow counts unhealthy threads (health FAILED or VIOLATED) started in
// one bucket of a window that share a first issue: contract version, rule
// (issue type or step_failed), step, and for free-form threads the class of
// the message (domain.MessageClass). Several rows may share a key:
// the use case sums them.
type ProblemRow struct {
	ContractName    string // "" for free-form threads
	ContractVersion int
	Rule, Step      string
	MessageClass    string    // free-form threads only
	Start           time.Time // the bucket's start
	Count           int
	Example         string // one thread id of the row; "" when all its threads were deleted
}

// ProblemReads reads the causes of unhealthy threads from a roll-up of the
// ended ones (problems_hourly) and the threads still active or ended since
// it last ran: what it reads grows with the window's hours and causes and
// with the threads in flight, not with the threads stored.
type ProblemReads interface {
	// ProblemRows returns the rows of threads started in [since, until)
	// (whole hours), per bucket of that width (whole hours) counted from
	// since, newest buckets first, at most limit rows.
	ProblemRows(ctx context.Context, since, until time.Time, bucket time.Duration, limit int) ([]ProblemRow, error)
}
