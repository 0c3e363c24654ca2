package ops

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// AlertSweepDeps wires the alert sweep.
type AlertSweepDeps struct {
	Store     ports.AlertSweepStore
	Contracts ports.Contracts
	Clock     ports.Clock
	Metrics   ports.AlertMetrics
	Log       *slog.Logger
	// SilentAfter flags active threads without an update for that long
	// (alerts.silent_after; 0 turns the check off).
	SilentAfter time.Duration
	// Batch threads are looked up per query.
	Batch int
	// Recorded is told about each recorded alert's notifications (the
	// hub, to push them to subscribers), and Nudge that outbox rows may be
	// due (optional both).
	Recorded func([]ports.NotificationRecord)
	Nudge    func()
}

// AlertSweep records, once per thread, condition and episode, a validation result
// on active threads past their contract's max_duration (overdue) or
// without an update for SilentAfter (silent), so stuck threads show up
// without a new step, and their notifications reach webhooks.
type AlertSweep struct {
	d         AlertSweepDeps
	contracts map[string]domain.Contract // "name:version" → contract (immutable)
	// scanned is, per check ("silent", "overdue:name:version"), the cutoff
	// of its last complete pass: a thread only becomes due when the cutoff
	// passes its start or last update, so the next pass reads only the
	// threads the cutoff passed since (less sweepOverlap), not every
	// flagged thread that is still active. Empty after a start: the first
	// pass reads them all.
	scanned map[string]time.Time
	mu      sync.Mutex // guards contracts and scanned: Sweep may run concurrently
}

// sweepOverlap re-reads the end of the previous pass's window, for
// threads whose transaction committed after that pass read.
const sweepOverlap = 10 * time.Minute

// NewAlertSweep builds the sweep.
func NewAlertSweep(d AlertSweepDeps) *AlertSweep {
	if d.Store == nil || d.Clock == nil {
		panic("ops.NewAlertSweep: missing dependency")
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Metrics == nil {
		d.Metrics = ports.NopMetrics{}
	}
	if d.Batch < 1 {
		d.Batch = 100
	}
	return &AlertSweep{d: d, contracts: map[string]domain.Contract{}, scanned: map[string]time.Time{}}
}

// AlertSweepResult counts the alerts one sweep recorded.
type AlertSweepResult struct {
	Overdue, Silent int
}

// Sweep runs both checks once. The engine runs it; it checks no permission.
// Replicas may sweep at once: each alert is recorded by exactly one.
func (a *AlertSweep) Sweep(ctx context.Context) (AlertSweepResult, error) {
	var res AlertSweepResult
	now := a.d.Clock.Now().UTC().Truncate(time.Microsecond)
	if a.d.Contracts != nil {
		limits, err := a.maxDurations(ctx)
		if err != nil {
			return res, err
		}
		for _, l := range limits {
			key, cutoff := "overdue:"+l.c.Name+":"+strconv.Itoa(l.c.Version), now.Add(-l.c.MaxDuration)
			n, err := a.flag(ctx, domain.AlertOverdue, func(limit int) ([]string, error) {
				return a.d.Store.OverdueThreads(ctx, l.c.Name, l.c.Version, a.since(key), cutoff, limit)
			}, func(t *domain.Thread) (ports.ThreadAlert, bool) {
				issue, due := t.Overdue(l.c.MaxDuration, now)
				if !due {
					return ports.ThreadAlert{}, false
				}
				return alertOn(t, t.CreatedAt, issue, now), true
			})
			res.Overdue += n
			if err != nil {
				return res, err
			}
			a.mu.Lock()
			a.scanned[key] = cutoff
			a.mu.Unlock()
		}
	}
	if a.d.SilentAfter > 0 {
		cutoff := now.Add(-a.d.SilentAfter)
		n, err := a.flag(ctx, domain.AlertSilent, func(limit int) ([]string, error) {
			return a.d.Store.SilentThreads(ctx, a.since("silent"), cutoff, limit)
		}, func(t *domain.Thread) (ports.ThreadAlert, bool) {
			issue, due := t.Silent(a.d.SilentAfter, now)
			if !due {
				return ports.ThreadAlert{}, false
			}
			return alertOn(t, t.UpdatedAt, issue, now), true
		})
		res.Silent += n
		if err != nil {
			return res, err
		}
		a.mu.Lock()
		a.scanned["silent"] = cutoff
		a.mu.Unlock()
	}
	return res, nil
}

// since is where a check's next pass starts reading (zero: from the
// beginning).
func (a *AlertSweep) since(key string) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.scanned[key]
	if !ok {
		return time.Time{}
	}
	return t.Add(-sweepOverlap)
}

type maxDuration struct{ c domain.Contract }

// maxDurations lists the contract versions with a max_duration.
func (a *AlertSweep) maxDurations(ctx context.Context) ([]maxDuration, error) {
	cs, err := a.d.Contracts.ListContracts(ctx)
	if err != nil {
		return nil, err
	}
	var out []maxDuration
	for _, c := range cs {
		vs, err := a.d.Contracts.ListContractVersions(ctx, c.Name)
		if err != nil {
			if domain.KindOf(err) == domain.KindNotFound {
				continue // deleted meanwhile
			}
			return nil, err
		}
		for _, v := range vs {
			key := v.Name + ":" + strconv.Itoa(v.Version)
			a.mu.Lock()
			full, ok := a.contracts[key]
			a.mu.Unlock()
			if !ok {
				if full, err = a.d.Contracts.GetContract(ctx, v.Name, v.Version); err != nil {
					if domain.KindOf(err) == domain.KindNotFound {
						continue
					}
					return nil, err
				}
				a.mu.Lock()
				a.contracts[key] = full
				a.mu.Unlock()
			}
			if full.MaxDuration > 0 {
				out = append(out, maxDuration{full})
			}
		}
	}
	return out, nil
}

// flag records condition on every thread find returns, a batch at a time.
// A thread another replica flagged first, or deleted meanwhile, is skipped;
// find no longer returns it, so a batch of skipped threads is followed by
// the next one rather than ending the pass (the caller then moves the
// check's window past threads never read). Only a batch that recorded
// nothing and repeats the previous one ends it early, so the loop ends.
func (a *AlertSweep) flag(ctx context.Context, condition string, find func(limit int) ([]string, error),
	fn func(t *domain.Thread) (ports.ThreadAlert, bool)) (int, error) {
	n := 0
	var prev []string
	for {
		ids, err := find(a.d.Batch)
		if err != nil || len(ids) == 0 {
			return n, err
		}
		if slices.Equal(ids, prev) {
			return n, nil
		}
		prev = ids
		progress := false
		for _, id := range ids {
			var notes []ports.NotificationRecord
			ok, err := a.d.Store.RecordThreadAlert(ctx, id, condition, func(t *domain.Thread) (ports.ThreadAlert, bool) {
				al, ok := fn(t)
				notes = al.Notifications
				return al, ok
			})
			if err != nil {
				if domain.KindOf(err) == domain.KindNotFound {
					continue // deleted meanwhile
				}
				return n, err
			}
			if !ok {
				continue
			}
			progress = true
			n++
			a.d.Metrics.AlertRecorded(condition)
			if a.d.Recorded != nil {
				a.d.Recorded(notes)
			}
		}
		if a.d.Nudge != nil && progress {
			a.d.Nudge()
		}
		if len(ids) < a.d.Batch {
			return n, nil
		}
	}
}

// alertOn builds the validation result and its notification for issue on
// t, and folds it into t's health (VIOLATED for a major issue). The thread
// stays active and its updated_at is left alone.
func alertOn(t *domain.Thread, episode time.Time, issue domain.ValidationIssue, now time.Time) ports.ThreadAlert {
	vr := domain.NewValidationResult([]domain.ValidationIssue{issue})
	t.RecordAlert(vr.Issues)
	v := ports.ValidationRecord{ID: uuid.NewString(), StepName: "global", OverallStatus: vr.OverallStatus, Issues: vr.Issues,
		CriticalCount: vr.CriticalCount, WarningCount: vr.WarningCount, MinorCount: vr.MinorCount, InfoCount: vr.InfoCount,
		CreatedAt: now}
	n := ports.NotificationRecord{ID: uuid.NewString(), ThreadID: t.ID, StepName: "global", ContractName: t.ContractName,
		OwnerID: t.OwnerID, Source: "validation", NotificationType: "validation.violated", ValidationStatus: vr.OverallStatus,
		ViolationType: issue.Type, Severity: string(issue.Severity), Message: issue.Message,
		Details: map[string]any{"issues": vr.Issues}, CreatedAt: now}
	return ports.ThreadAlert{Episode: episode, Validation: v, Notifications: []ports.NotificationRecord{n}}
}

// Run sweeps every interval until ctx ends.
func (a *AlertSweep) Run(ctx context.Context, interval time.Duration) {
	every(ctx, interval, func(ctx context.Context) {
		res, err := a.Sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			a.d.Log.Warn("alert sweep", "err", err, "overdue", res.Overdue, "silent", res.Silent)
		case res.Overdue+res.Silent > 0:
			a.d.Log.Info("alert sweep", "overdue", res.Overdue, "silent", res.Silent)
		}
	})
}
