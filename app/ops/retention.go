package ops

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/threadengine/engine/app/auditctx"
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
	Audit    RetentionAuditLog
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

// Retention holds the retention use cases, one handler each (built by
// NewRetention from one set of dependencies): reading, overriding and
// resetting the period (administrators), and the sweeper the engine runs.
type Retention struct {
	Get     GetRetentionHandler
	Set     SetRetentionHandler
	Reset   ResetRetentionHandler
	Sweeper *RetentionSweeper
}

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
	p := retentionPolicy{settings: d.Settings, configDays: d.ConfigDays, idleDays: d.IdleDays, log: d.Log}
	a := retentionAudit{audit: d.Audit, clock: d.Clock, newID: d.NewID, log: d.Log}
	return &Retention{
		Get:   GetRetentionHandler{policy: p},
		Set:   SetRetentionHandler{policy: p, settings: d.Settings, a: a},
		Reset: ResetRetentionHandler{policy: p, settings: d.Settings, a: a},
		Sweeper: &RetentionSweeper{policy: p, store: d.Store, a: a, deleted: d.Deleted, log: d.Log,
			batchSize: d.BatchSize, batchPause: d.BatchPause},
	}
}

// retentionPolicy reads the period in force.
type retentionPolicy struct {
	settings interface {
		GetSetting(ctx context.Context, key string) (string, bool, error)
	}
	configDays, idleDays int
	log                  *slog.Logger
}

// RetentionAuditLog is the audit log the retention use cases write: a line
// at a time, and a sweep's batch in one call (the identity store writes it
// in one statement: a batch of 1,000 deleted threads is then one write, not
// 1,000 commits, which cost more than the delete itself).
type RetentionAuditLog interface {
	ports.Audit
	RecordAudits(ctx context.Context, es []ports.AuditEntry) error
}

// retentionAudit records the retention use cases' audit lines.
type retentionAudit struct {
	audit RetentionAuditLog
	clock ports.Clock
	newID func() string
	log   *slog.Logger
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
func (r retentionPolicy) effective(ctx context.Context) (RetentionView, error) {
	v := RetentionView{ThreadsDays: r.configDays, Source: RetentionFromConfig, ConfigDays: r.configDays, ActiveIdleDays: r.idleDays}
	raw, ok, err := r.settings.GetSetting(ctx, RetentionDaysSetting)
	if err != nil {
		return RetentionView{}, err
	}
	if ok {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 0 {
			r.log.Warn("ignoring an unreadable retention setting", "value", raw)
			return v, nil
		}
		v.ThreadsDays, v.Source = n, RetentionFromUI
	}
	return v, nil
}

// GetRetentionHandler reads the policy.
type GetRetentionHandler struct{ policy retentionPolicy }

// Handle returns the policy (administrators: settings.manage).
func (h GetRetentionHandler) Handle(ctx context.Context) (RetentionView, error) {
	if _, err := authz.Require(ctx, domain.PermSettingsManage); err != nil {
		return RetentionView{}, err
	}
	return h.policy.effective(ctx)
}

// SetRetentionHandler overrides the period.
type SetRetentionHandler struct {
	policy   retentionPolicy
	settings interface {
		PutSetting(ctx context.Context, key, value, updatedBy string, now time.Time) error
	}
	a retentionAudit
}

// Handle overrides retention.threads_days (0 keeps threads forever).
// Audited.
func (h SetRetentionHandler) Handle(ctx context.Context, days int) (RetentionView, error) {
	p, err := authz.Require(ctx, domain.PermSettingsManage)
	if err != nil {
		return RetentionView{}, err
	}
	if days < 0 || days > MaxRetentionDays {
		return RetentionView{}, domain.Invalid("threads_days", "threads_days must be between 0 (keep forever) and %d", MaxRetentionDays)
	}
	now := h.a.clock.Now().UTC()
	if err := h.settings.PutSetting(ctx, RetentionDaysSetting, strconv.Itoa(days), p.ID, now); err != nil {
		return RetentionView{}, err
	}
	h.a.record(ctx, p.Kind, p.ID, "retention.set", "retention", map[string]any{"threads_days": days})
	return h.policy.effective(ctx)
}

// ResetRetentionHandler removes the override.
type ResetRetentionHandler struct {
	policy   retentionPolicy
	settings interface {
		DeleteSetting(ctx context.Context, key string) error
	}
	a retentionAudit
}

// Handle removes the override so retention.threads_days applies again.
func (h ResetRetentionHandler) Handle(ctx context.Context) (RetentionView, error) {
	p, err := authz.Require(ctx, domain.PermSettingsManage)
	if err != nil {
		return RetentionView{}, err
	}
	if err := h.settings.DeleteSetting(ctx, RetentionDaysSetting); err != nil && domain.KindOf(err) != domain.KindNotFound {
		return RetentionView{}, err
	}
	h.a.record(ctx, p.Kind, p.ID, "retention.reset", "retention", nil)
	return h.policy.effective(ctx)
}

// RetentionSweeper deletes threads past the period in force, in bounded
// batches.
type RetentionSweeper struct {
	policy     retentionPolicy
	store      ports.ThreadEraser
	a          retentionAudit
	deleted    func(ids []string)
	log        *slog.Logger
	batchSize  int
	batchPause time.Duration
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
func (r *RetentionSweeper) Sweep(ctx context.Context) (SweepResult, error) {
	var res SweepResult
	v, err := r.policy.effective(ctx)
	if err != nil {
		return res, err
	}
	now := r.a.clock.Now().UTC()
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
		ids, err := r.store.ExpiredThreads(ctx, ended, idle, r.batchSize)
		if err != nil || len(ids) == 0 || slices.Equal(ids, prev) {
			return res, err
		}
		prev = ids
		gone, err := r.store.DeleteThreads(ports.WithDeletionReason(ctx, domain.DeletedByRetention), ids)
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
		if r.deleted != nil {
			r.deleted(deleted)
		}
		// One entry per thread, its id as the target: a swept thread is
		// found in the audit log by its id (GET /v1/audit?target=<id>),
		// like one deleted on request.
		entries := make([]ports.AuditEntry, len(gone))
		for i, t := range gone {
			facts := threadFacts(t)
			facts["threads_days"], facts["active_idle_days"] = v.ThreadsDays, v.ActiveIdleDays
			// by the system actor "retention"
			entries[i] = r.a.entry(domain.PrincipalSystem, "retention", "thread.retention_delete", t.ID, facts)
		}
		r.a.recordAll(ctx, entries)
		if len(ids) < r.batchSize {
			return res, nil
		}
		if r.batchPause > 0 {
			select {
			case <-ctx.Done():
				return res, ctx.Err()
			case <-time.After(r.batchPause):
			}
		}
	}
}

// Run sweeps now and then every interval until ctx ends.
func (r *RetentionSweeper) Run(ctx context.Context, interval time.Duration) {
	every(ctx, interval, func(ctx context.Context) {
		res, err := r.Sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			r.log.Warn("retention sweep", "err", err, "deleted_threads", res.Threads)
		case res.Threads > 0:
			r.log.Info("retention sweep", "deleted_threads", res.Threads, "batches", res.Batches)
		}
	})
}

// record writes one audit line.
func (a retentionAudit) record(ctx context.Context, kind domain.PrincipalKind, actor, action, target string, details map[string]any) {
	a.recordAll(ctx, []ports.AuditEntry{a.entry(kind, actor, action, target, details)})
}

func (a retentionAudit) entry(kind domain.PrincipalKind, actor, action, target string, details map[string]any) ports.AuditEntry {
	return ports.AuditEntry{ID: a.newID(), At: a.clock.Now().UTC(), ActorKind: kind, ActorID: actor, Action: action,
		Target: target, Details: details}
}

// recordAll writes the lines, a batch in one call. The deletion they
// record has committed, so they are written even when ctx has ended
// meanwhile (the engine shutting down mid-sweep cancelled them and lost
// the lines of deleted threads; auditctx).
func (a retentionAudit) recordAll(ctx context.Context, es []ports.AuditEntry) {
	ctx, cancel := auditctx.Detached(ctx)
	defer cancel()
	if len(es) > 1 {
		if err := a.audit.RecordAudits(ctx, es); err != nil {
			a.log.Error("audit record failed", "action", es[0].Action, "lines", len(es), "err", err)
		}
		return
	}
	for _, e := range es {
		if err := a.audit.RecordAudit(ctx, e); err != nil {
			a.log.Error("audit record failed", "action", e.Action, "target", e.Target, "err", err)
		}
	}
}
