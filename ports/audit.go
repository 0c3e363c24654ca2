package ports

import (
	"context"
	"time"
)

// AuditFilter selects audit lines, newest first. Zero fields do not filter.
type AuditFilter struct {
	// Action matches exactly, or every action under a prefix ending in "."
	// ("thread." matches thread.delete and thread.retention_delete).
	Action  string
	ActorID string
	Target  string
	// Since and Until bound At: Since <= At < Until.
	Since, Until time.Time
	// After continues a listing after the last line of the previous page.
	After *AuditCursor
	Limit int
}

// AuditCursor is the position of one audit line in the newest-first order.
type AuditCursor struct {
	At time.Time
	ID string
}

// AuditReader lists the audit log.
type AuditReader interface {
	ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, error)
}

// AuditPruner deletes old audit lines (audit.retention_days).
type AuditPruner interface {
	// PruneAudit deletes up to limit lines recorded before before, oldest
	// first, and returns how many it deleted.
	PruneAudit(ctx context.Context, before time.Time, limit int) (int, error)
}
