package ops

import (
	"context"
	"log/slog"
	"strings"

	"github.com/threadengine/engine/app/auditctx"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// ErasureDeps are the ports thread deletion needs.
type ErasureDeps struct {
	Store ports.ThreadEraser
	Audit ports.Audit
	Clock ports.Clock
	NewID func() string
	// Deleted is told which threads are gone so caches drop them (optional).
	Deleted func(ids []string)
	Log     *slog.Logger
}

// Erasure deletes whole threads: on request (an erasure request, by an
// administrator) and by the retention sweeper. Every deletion is audited
// without the thread's content (the point of erasure is to forget it).
type Erasure struct{ d ErasureDeps }

// NewErasure builds the deletion use cases.
func NewErasure(d ErasureDeps) *Erasure {
	if d.Store == nil || d.Audit == nil || d.Clock == nil || d.NewID == nil {
		panic("ops.NewErasure: missing dependency")
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	return &Erasure{d: d}
}

// DeleteThread deletes one thread with every row that belongs to it. It
// needs data.delete (administrators).
func (e *Erasure) DeleteThread(ctx context.Context, id string) error {
	p, err := authz.Require(ctx, domain.PermDataDelete)
	if err != nil {
		return err
	}
	if strings.TrimSpace(id) == "" {
		return domain.Invalid("id", "a thread id is required")
	}
	gone, err := e.d.Store.DeleteThreads(ports.WithDeletionReason(ctx, domain.DeletedByErasure), []string{id})
	if err != nil {
		return err
	}
	if len(gone) == 0 {
		return domain.NotFound("thread")
	}
	e.forget(gone)
	e.audit(ctx, p.Kind, p.ID, "thread.delete", gone[0].ID, threadFacts(gone[0]))
	return nil
}

func (e *Erasure) forget(gone []domain.Thread) {
	if e.d.Deleted == nil {
		return
	}
	ids := make([]string, len(gone))
	for i, t := range gone {
		ids[i] = t.ID
	}
	e.d.Deleted(ids)
}

// threadFacts is what the audit log keeps of a deleted thread: no label,
// refs or context, which may be personal data.
func threadFacts(t domain.Thread) map[string]any {
	f := map[string]any{"status": t.Status, "steps": t.StepCount(), "created_at": t.CreatedAt}
	if t.ContractName != "" {
		f["contract"] = t.ContractName
		f["contract_version"] = t.ContractVersion
	}
	return f
}

func (e *Erasure) audit(ctx context.Context, kind domain.PrincipalKind, actor, action, target string, details map[string]any) {
	entry := ports.AuditEntry{ID: e.d.NewID(), At: e.d.Clock.Now().UTC(), ActorKind: kind, ActorID: actor,
		Action: action, Target: target, Details: details}
	// The action has committed: its line is written even if ctx ends now.
	ctx, cancel := auditctx.Detached(ctx)
	defer cancel()
	if err := e.d.Audit.RecordAudit(ctx, entry); err != nil {
		// The rows are gone; losing the audit line must not report a failure
		// the caller would retry.
		e.d.Log.Error("audit record failed", "action", action, "target", target, "err", err)
	}
}
