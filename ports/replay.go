package ports

import (
	"context"
	"time"

	"github.com/threadengine/engine/domain"
)

// ReplayThread is one thread of a contract, as a replay of a draft reads
// it: the recorded attempts and who wrote them.
type ReplayThread struct {
	ID              string
	ContractVersion int
	CreatedAt       time.Time
	Status          string
	// Health is the verdict recorded under the version the thread ran on.
	Health domain.HealthStatus
	// StepCount is the number of recorded attempts; Steps holds at most
	// the first maxSteps of them, in record order, each with the roles its
	// writer holds on the thread.
	StepCount int
	Steps     []domain.ReplayStep
}

// ReplayCursor is where a page of threads ended: threads come newest first
// by (CreatedAt, ID).
type ReplayCursor struct {
	CreatedAt time.Time
	ID        string
}

// ReplayReader reads a contract's threads page by page for a replay.
type ReplayReader interface {
	// ContractThreads returns up to limit threads started with any version
	// of contract name, newest first (created_at, then id, descending),
	// strictly after cursor (nil: from the newest), each with its first
	// maxSteps recorded attempts. Rows is the number of rows the page read
	// (threads, attempts and party rows), for the caller's budget.
	ContractThreads(ctx context.Context, name string, after *ReplayCursor, limit, maxSteps int) (page []ReplayThread, rows int, err error)
}
