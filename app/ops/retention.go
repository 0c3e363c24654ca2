package ops

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// RetentionDaysSetting is the ports.Settings key of the UI override of
// retention.threads_days.
const RetentionDaysSetting = "retention.threads_days"

// MaxRetentionDays bounds the setting (a hundred years).
const MaxRetentionDays = 36500

// RetentionDeps wires the retention use cases.
type RetentionDeps struct {
	Store    ports.ThreadEraser
	Settings ports.Settings
	Audit    ports.Audit
	Clock    ports.Clock
	NewID    func() string
	// Deleted is told which threads are gone so caches drop them (optional).
	Deleted func(ids []string)
	Log     *slog.Logger
	// ConfigDays is retention.threads_days (0 keeps ended threads forever);
	// IdleDays is retention.active_idle_days (0 never deletes active threads).
	ConfigDays, IdleDays int
	// BatchSize threads are deleted per transaction, BatchPause apart, so a
	// long sweep leaves the database to ingestion in between.
	BatchSize  int
	BatchPause time.Duration
}

// Retention deletes threads past the retention period, in bounded batches,
// and lets administrators change the period at run time.
type Retention struct{ d RetentionDeps }

// NewRetention builds the retention use cases.
func NewRetention(d RetentionDeps) *Retention {
	if d.Store == nil || d.Settings == nil || d.Audit == nil || d.Clock == nil || d.NewID == nil {
		panic("ops.NewRetention: missing dependency")
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.BatchSize < 1 {
		d.BatchSize = 100
	}
	return &Retention{d: d}
}

// RetentionSource says where the period in force comes from.
type RetentionSource string

const (
	RetentionFromConfig RetentionSource = "config"
	RetentionFromUI     RetentionSource = "ui"
)

// RetentionView is the retention policy in force.
type RetentionView struct {
	ThreadsDays    int
	Source         RetentionSource
	ConfigDays     int
	ActiveIdleDays int
}

// effective is the period in force: the UI override, else the config.
func (r *Retention) effective(ctx context.Context) (RetentionView, error) {
	v := RetentionView{ThreadsDays: r.d.ConfigDays, Source: RetentionFromConfig, ConfigDays: r.d.ConfigDays, ActiveIdleDays: r.d.IdleDays}
	raw, ok, err := r.d.Settings.GetSetting(ctx, RetentionDaysSetting)
	if err != nil {
		return RetentionView{}, err
	}
	if ok {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 0 {
			r.d.Log.Warn("ignoring an unreadable retention setting", "value", raw)
			return v, nil
		}
		v.ThreadsDays, v.Source = n, RetentionFromUI
	}
	return v, nil
}

// Get returns the policy (administrators: settings.manage).
func (r *Retention) Get(ctx context.Context) (RetentionView, error) {
	if _, err := authz.Require(ctx, domain.PermSettingsManage); err != nil {
		return RetentionView{}, err
	}
	return r.effective(ctx)
}

// Set overrides retention.threads_days (0 keeps threads forever). Audited.
func (r *Retention) Set(ctx context.Context, days int) (RetentionView, error) {
	p, err := authz.Require(ctx, domain.PermSettingsManage)
	if err != nil {
		return RetentionView{}, err
	}
	if days < 0 || days > MaxRetentionDays {
		return RetentionView{}, domain.Invalid("threads_days", "threads_days must be between 0 (keep forever) and %d", MaxRetentionDays)
	}
	now := r.d.Clock.Now().UTC()
	if err := r.d.Settings.PutSetting(ctx, RetentionDaysSetting, strconv.Itoa(days), p.ID, now); err != nil {
		return RetentionView{}, err
	}
	r.audit(ctx, p.Kind, p.ID, "retention.set", map[string]any{"threads_days": days})
	return r.effective(ctx)
}

// Reset removes the override so retention.threads_days applies again.
func (r *Retention) Reset(ctx context.Context) (RetentionView, error) {
	p, err := authz.Require(ctx, domain.PermSettingsManage)
	if err != nil {
		return RetentionView{}, err
	}
	if err := r.d.Settings.DeleteSetting(ctx, RetentionDaysSetting); err != nil && domain.KindOf(err) != domain.KindNotFound {
		return RetentionView{}, err
	}
	r.audit(ctx, p.Kind, p.ID, "retention.reset", nil)
	return r.effective(ctx)
}

// SweepResult is what one sweep deleted.
type SweepResult struct {
	Threads, Batches int
}

// Sweep deletes every thread past the policy as it stands when the sweep
// starts: ended threads last updated more than ThreadsDays ago and, with
// ActiveIdleDays, active threads idle that long. The engine runs it; it
// checks no permission. Each batch is one transaction; each thread deleted
// gets its audit line.
func (r *Retention) Sweep(ctx context.Context) (SweepResult, error) {
	var res SweepResult
	v, err := r.effective(ctx)
	if err != nil {
		return res, err
	}
	now := r.d.Clock.Now().UTC()
	var ended, idle time.Time
	if v.ThreadsDays > 0 {
		ended = now.Add(-time.Duration(v.ThreadsDays) * 24 * time.Hour)
	}
	if v.ActiveIdleDays > 0 {
		idle = now.Add(-time.Duration(v.ActiveIdleDays) * 24 * time.Hour)
	}
	if ended.IsZero() && idle.IsZero() {
		return res, nil
	}
	var prev []string
	for {
		ids, err := r.d.Store.ExpiredThreads(ctx, ended, idle, r.d.BatchSize)
		if err != nil || len(ids) == 0 || slices.Equal(ids, prev) {
			return res, err
		}
		prev = ids
		gone, err := r.d.Store.DeleteThreads(ports.WithDeletionReason(ctx, domain.DeletedByRetention), ids)
		if err != nil {
			return res, err
		}
		if len(gone) == 0 {
			// Another replica deleted this batch meanwhile: go on with the
			// next one (a batch read twice in a row, deleted by no one,
			// ends the pass).
			continue
		}
		res.Threads += len(gone)
		res.Batches++
		deleted := make([]string, len(gone))
		for i, t := range gone {
			deleted[i] = t.ID
		}
		if r.d.Deleted != nil {
			r.d.Deleted(deleted)
		}
		// One entry per thread, its id as the target: a swept thread is
		// found in the audit log by its id (GET /v1/audit?target=<id>),
		// like one deleted on request.
		for _, t := range gone {
			facts := threadFacts(t)
			facts["threads_days"], facts["active_idle_days"] = v.ThreadsDays, v.ActiveIdleDays
			r.auditThread(ctx, t.ID, facts)
		}
		if len(ids) < r.d.BatchSize {
			return res, nil
		}
		if r.d.BatchPause > 0 {
			select {
			case <-ctx.Done():
				return res, ctx.Err()
			case <-time.After(r.d.BatchPause):
			}
		}
	}
}

// Run sweeps now and then every interval until ctx ends.
func (r *Retention) Run(ctx context.Context, interval time.Duration) {
	every(ctx, interval, func(ctx context.Context) {
		res, err := r.Sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			r.d.Log.Warn("retention sweep", "err", err, "deleted_threads", res.Threads)
		case res.Threads > 0:
			r.d.Log.Info("retention sweep", "deleted_threads", res.Threads, "batches", res.Batches)
		}
	})
}

// auditThread records the sweep's deletion of thread id, by the system
// actor "retention".
func (r *Retention) auditThread(ctx context.Context, id string, details map[string]any) {
	e := ports.AuditEntry{ID: r.d.NewID(), At: r.d.Clock.Now().UTC(), ActorKind: domain.PrincipalSystem, ActorID: "retention",
		Action: "thread.retention_delete", Target: id, Details: details}
	if err := r.d.Audit.RecordAudit(ctx, e); err != nil {
		r.d.Log.Error("audit record failed", "action", e.Action, "target", id, "err", err)
	}
}

func (r *Retention) audit(ctx context.Context, kind domain.PrincipalKind, actor, action string, details map[string]any) {
	e := ports.AuditEntry{ID: r.d.NewID(), At: r.d.Clock.Now().UTC(), ActorKind: kind, ActorID: actor, Action: action,
		Target: "retention", Details: details}
	if err := r.d.Audit.RecordAudit(ctx, e); err != nil {
		r.d.Log.Error("audit record failed", "action", action, "err", err)
	}
}
