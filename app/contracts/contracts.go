// Package contracts holds the contract use cases: publish, preview, read, list and delete versions, in YAML or Gherkin.
package contracts

import (
	"context"
	"log/slog"

	"github.com/threadengine/engine/app/auditctx"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Application is the contract use cases, one handler each (the layout of
// app.IdentityApplication).
type Application struct {
	Commands Commands
	Queries  Queries
}

// Commands change the stored contracts.
type Commands struct {
	Publish       PublishHandler
	DeleteVersion DeleteVersionHandler
}

// Queries read them, or check a source without storing it.
type Queries struct {
	Preview      PreviewHandler
	Replay       ReplayHandler
	Read         ReadHandler
	List         ListHandler
	ListVersions ListVersionsHandler
}

// Store is every port the contract use cases use, as contractstore.Store
// implements them.
type Store interface {
	ports.ContractPublisher
	ports.ContractReader
	ports.ContractSources
	ports.ContractLister
}

// Deps are what New wires the handlers from. Eraser, Deleted, Audit,
// NewID and Threads are optional: without Eraser deletion is refused;
// Deleted is told about a deleted version so caches of immutable versions
// drop it; with Audit and NewID every change is audited; without Threads
// replay is unavailable (ReplayLimits zero: the defaults).
type Deps struct {
	Store        Store
	Eraser       ports.ContractEraser
	Threads      ports.ReplayReader
	ReplayLimits ReplayLimits
	Deleted      func(name string, version int)
	Clock        ports.Clock
	Audit        ports.Audit
	NewID        func() string
	Log          *slog.Logger
	// Classifier: a semantic classifier is configured
	// (contracts.classifier.url); without one preview and publish warn that
	// steps with semantic rules are refused.
	Classifier bool
}

// New builds every contract handler from d.
func New(d Deps) Application {
	if d.Store == nil || d.Clock == nil {
		panic("contracts.New: missing dependency")
	}
	a := NewAuditor(d.Audit, d.NewID, d.Clock, d.Log)
	return Application{
		Commands: Commands{
			Publish:       publishWith(NewPublishHandler(d.Store, d.Store, d.Clock, a), d.Classifier),
			DeleteVersion: NewDeleteVersionHandler(d.Eraser, d.Deleted, a),
		},
		Queries: Queries{
			Preview:      NewPreviewHandler(d.Store, d.Classifier),
			Replay:       NewReplayHandler(d.Store, d.Threads, d.Clock, d.ReplayLimits),
			Read:         NewReadHandler(d.Store, d.Store),
			List:         NewListHandler(d.Store),
			ListVersions: NewListVersionsHandler(d.Store),
		},
	}
}

// Auditor records contract changes in the audit log; its zero value
// records nothing.
type Auditor struct {
	audit ports.Audit
	newID func() string
	clock ports.Clock
	log   *slog.Logger
}

// NewAuditor records with audit (nil: nothing is recorded).
func NewAuditor(audit ports.Audit, newID func() string, clock ports.Clock, log *slog.Logger) Auditor {
	if log == nil {
		log = slog.Default()
	}
	return Auditor{audit: audit, newID: newID, clock: clock, log: log}
}

func (a Auditor) record(ctx context.Context, p domain.Principal, action, target string, details map[string]any) {
	if a.audit == nil || a.newID == nil || a.clock == nil {
		return
	}
	e := ports.AuditEntry{ID: a.newID(), At: a.clock.Now().UTC(), ActorKind: p.Kind, ActorID: p.ID, Action: action,
		Target: target, Details: details}
	// The action has committed: its line is written even if ctx ends now.
	ctx, cancel := auditctx.Detached(ctx)
	defer cancel()
	if err := a.audit.RecordAudit(ctx, e); err != nil {
		// The change is made; losing its audit line must not fail it.
		a.log.Error("audit record failed", "action", e.Action, "target", e.Target, "err", err)
	}
}
