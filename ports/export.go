package ports

import (
	"context"
	"time"

	"github.com/threadengine/engine/domain"
)

// ExportFilter selects threads to export. Zero fields do not filter.
type ExportFilter struct {
	Status          string
	ContractName    string
	ContractVersion int // with ContractName only
	// StartedSince and StartedBefore bound created_at: since <= t < before.
	StartedSince, StartedBefore time.Time
	// Within, when set, replaces StartedSince with "this long before now"
	// (the list's time presets: last hour, 24 hours, 7 or 30 days).
	Within time.Duration
	// The thread list's other filters, with its meanings (ThreadFilter):
	// any of Health; Tag exact; IDPrefix case-insensitive; RefKey whole and
	// case-insensitive (alone: has a ref under it); RefValue a case-insensitive substring.
	Health   []domain.HealthStatus
	Tag      string
	IDPrefix string
	RefKey   string
	RefValue string
	// IssueType and IssueStep keep threads whose first issue is of this
	// rule (a validation issue type, or step_failed) and at this step.
	IssueType string
	IssueStep string
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
	// StoredBytes returns, for each thread that has any, the bytes of the
	// JSON an export of it reads whole: its attempts' contexts and metadata,
	// its steps' latest contexts, its sub-steps' payloads, its validations'
	// issues and its notifications' messages and details. It is summed in
	// the database, so an
	// export knows what a thread would cost before loading it.
	StoredBytes(ctx context.Context, threadIDs []string) (map[string]int64, error)
}
