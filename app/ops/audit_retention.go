package ops

import (
	"context"
	"log/slog"
	"time"

	"github.com/threadengine/engine/app/auditctx"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// AuditRetentionDeps wire the audit log's retention.
type AuditRetentionDeps struct {
	Store ports.AuditPruner
	Audit ports.Audit
	Clock ports.Clock
	NewID func() string
	Log   *slog.Logger
	// Days is audit.retention_days: lines older than that many days are
	// deleted (0 keeps them forever).
	Days int
	// BatchSize lines are deleted per statement, BatchPause apart.
	BatchSize  int
	BatchPause time.Duration
}

// AuditRetention deletes audit lines past audit.retention_days in the
// background, as Retention does threads.
type AuditRetention struct{ d AuditRetentionDeps }

// NewAuditRetention builds the audit log's sweeper.
func NewAuditRetention(d AuditRetentionDeps) *AuditRetention {
	if d.Store == nil || d.Audit == nil || d.Clock == nil || d.NewID == nil {
		panic("ops.NewAuditRetention: missing dependency")
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.BatchSize < 1 {
		d.BatchSize = 1000
	}
	return &AuditRetention{d: d}
}

// Sweep deletes the lines recorded more than Days days ago, in batches, and
// records one line saying how many it deleted and up to when (so the log
// itself shows where it begins). It checks no permission: the engine runs
// it.
func (a *AuditRetention) Sweep(ctx context.Context) (int, error) {
	if a.d.Days <= 0 {
		return 0, nil
	}
	now := a.d.Clock.Now().UTC()
	before := now.Add(-time.Duration(a.d.Days) * 24 * time.Hour)
	total := 0
	for {
		n, err := a.d.Store.PruneAudit(ctx, before, a.d.BatchSize)
		total += n
		if err != nil || n < a.d.BatchSize {
			a.record(ctx, now, before, total)
			return total, err
		}
		if a.d.BatchPause > 0 {
			select {
			case <-ctx.Done():
				a.record(context.WithoutCancel(ctx), now, before, total)
				return total, ctx.Err()
			case <-time.After(a.d.BatchPause):
			}
		}
	}
}

func (a *AuditRetention) record(ctx context.Context, now, before time.Time, n int) {
	if n == 0 {
		return
	}
	e := ports.AuditEntry{ID: a.d.NewID(), At: now, ActorKind: domain.PrincipalSystem, ActorID: "retention",
		Action: "audit.retention_delete", Target: "audit_log",
		Details: map[string]any{"entries": n, "before": before, "retention_days": a.d.Days}}
	// The action has committed: its line is written even if ctx ends now.
	ctx, cancel := auditctx.Detached(ctx)
	defer cancel()
	if err := a.d.Audit.RecordAudit(ctx, e); err != nil {
		a.d.Log.Error("audit record failed", "action", e.Action, "err", err)
	}
}

// Run sweeps now and then every interval until ctx ends; with Days 0 it
// returns at once.
func (a *AuditRetention) Run(ctx context.Context, interval time.Duration) {
	if a.d.Days <= 0 {
		return
	}
	every(ctx, interval, func(ctx context.Context) {
		n, err := a.Sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			a.d.Log.Warn("audit retention sweep", "err", err, "deleted_entries", n)
		case n > 0:
			a.d.Log.Info("audit retention sweep", "deleted_entries", n)
		}
	})
}
