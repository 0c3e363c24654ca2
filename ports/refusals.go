package ports

import (
	"context"
	"time"
)

// StepRefusal is one step submission the contract refused before anything
// was recorded (a content rule broken): who tried what, when.
type StepRefusal struct {
	ID              string
	ThreadID        string
	ContractName    string
	ContractVersion int
	StepName        string
	IdempotencyKey  string
	PrincipalID     string
	Role            string
	Code            string
	Field           string
	Rule            string
	Message         string
	Context         map[string]string
	CreatedAt       time.Time
}

// RefusalFilter selects refusals, newest first (by CreatedAt, then ID): of
// one thread and/or one contract, after the previous page's last one
// (Before, BeforeID; zero: from the newest), at most Limit.
type RefusalFilter struct {
	ThreadID string
	Contract string
	Before   time.Time
	BeforeID string
	Limit    int
}

// RefusalLog keeps refused step submissions for a bounded time.
type RefusalLog interface {
	// LogRefusal stores one refusal.
	LogRefusal(ctx context.Context, r StepRefusal) error
	// PruneRefusals deletes the refusals created before cutoff, and the
	// oldest beyond the newest maxRows.
	PruneRefusals(ctx context.Context, cutoff time.Time, maxRows int) (int64, error)
}

// RefusalReader reads the refusal log.
type RefusalReader interface {
	ListRefusals(ctx context.Context, f RefusalFilter) ([]StepRefusal, error)
}
