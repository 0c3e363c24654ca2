package ports

import (
	"context"
	"time"
)

// ExportFilter selects threads to export. Zero fields do not filter.
type ExportFilter struct {
	Status          string
	ContractName    string
	ContractVersion int // with ContractName only
	// StartedSince and StartedBefore bound created_at: since <= t < before.
	StartedSince, StartedBefore time.Time
}

// ThreadCursor is a position in the export order (created_at, id).
type ThreadCursor struct {
	CreatedAt time.Time
	ID        string
}

// ThreadLister pages thread ids in a stable order for exports, so a
// stream of any length holds one page in memory at a time.
type ThreadLister interface {
	// ListThreadIDs returns up to limit threads matching f ordered by
	// (created_at, id), after the cursor when it is not nil.
	ListThreadIDs(ctx context.Context, f ExportFilter, after *ThreadCursor, limit int) ([]ThreadCursor, error)
}
