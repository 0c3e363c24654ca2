package ports

import (
	"context"
	"time"

	"github.com/threadengine/engine/domain"
)

// ThreadEraser deletes whole threads with every row that belongs to them
// (steps, attempts, sub-steps, validations, notifications, refs, access).
type ThreadEraser interface {
	// DeleteThreads deletes the threads with these ids in one transaction
	// and returns the ones that existed, each with its contract and number
	// of steps (for the audit log); unknown ids are ignored.
	DeleteThreads(ctx context.Context, ids []string) ([]domain.Thread, error)
	// ExpiredThreads returns up to limit ids of threads that ended before
	// endedBefore, or (when idleBefore is not zero) are still active and
	// were last updated before idleBefore, oldest first.
	ExpiredThreads(ctx context.Context, endedBefore, idleBefore time.Time, limit int) ([]string, error)
}
