package ports

import (
	"context"
	"time"
)

// StepRefusal is one step submission the contract refused before anything
// was recorded (a content rule broken): who tried what, when.
type StepRefusal struct {
	ID              string            `json:"id"`
	ThreadID        string            `json:"threadId"`
	ContractName    string            `json:"contractName"`
	ContractVersion int               `json:"contractVersion"`
	StepName        string            `json:"stepName"`
	IdempotencyKey  string            `json:"idempotencyKey"`
	PrincipalID     string            `json:"principalId"`
	Role            string            `json:"role"`
	Code            string            `json:"code"`
	Field           string            `json:"field"`
	Rule            string            `json:"rule"`
	Message         string            `json:"message"`
	Context         map[string]string `json:"context"`
	CreatedAt       time.Time         `json:"createdAt"`
}

// RefusalFilter selects refusals, newest first: of one thread and/or one
// contract, created before Before (a page's last CreatedAt; zero: now), at
// most Limit.
type RefusalFilter struct {
	ThreadID string
	Contract string
	Before   time.Time
	Limit    int
}

// RefusalLog keeps refused step submissions for a bounded time.
type RefusalLog interface {
	// LogRefusal stores one refusal.
	LogRefusal(ctx context.Context, r StepRefusal) error
	// PruneRefusals deletes the refusals created before cutoff.
	PruneRefusals(ctx context.Context, cutoff time.Time) (int64, error)
}

// RefusalReader reads the refusal log.
type RefusalReader interface {
	ListRefusals(ctx context.Context, f RefusalFilter) ([]StepRefusal, error)
}
