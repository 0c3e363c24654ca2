package app

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// ContractsDeps are the ports the contract use cases need. Audit and NewID are
// optional; with both set, every upload is recorded in the audit log.
type ContractsDeps struct {
	Store ports.Contracts
	// Eraser deletes unused versions (optional: without it deletion is refused).
	Eraser ports.ContractEraser
	// Deleted is told about a deleted version so caches of immutable
	// versions (app.Threads) drop it (optional).
	Deleted func(name string, version int)
	Clock   ports.Clock
	Audit   ports.Audit
	NewID   func() string
	Log     *slog.Logger
}

// Contracts uploads and reads contract versions.
type Contracts struct{ d ContractsDeps }

// NewContracts builds the contract use cases.
func NewContracts(d ContractsDeps) *Contracts {
	if d.Store == nil || d.Clock == nil {
		panic("app.NewContracts: missing dependency")
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	return &Contracts{d: d}
}

// UploadContract parses src and stores it as a new version. It needs
// contracts.write. An invalid source gives CodeInvalidContract with every
// problem in Details["problems"]; a version that is not newer than the
// latest gives CodeContractVersionConflict.
func (a *Contracts) UploadContract(ctx context.Context, src []byte) (domain.Contract, ports.ContractSummary, error) {
	p, err := Require(ctx, domain.PermContractsWrite)
	if err != nil {
		return domain.Contract{}, ports.ContractSummary{}, err
	}
	c, err := domain.ParseContract(src)
	if err != nil {
		return domain.Contract{}, ports.ContractSummary{}, err
	}
	now := a.d.Clock.Now().UTC()
	if err := a.d.Store.PutContractVersion(ctx, c, src, p.ID, now); err != nil {
		return domain.Contract{}, ports.ContractSummary{}, err
	}
	if a.d.Audit != nil && a.d.NewID != nil {
		e := ports.AuditEntry{ID: a.d.NewID(), At: now, ActorKind: p.Kind, ActorID: p.ID, Action: "contract.upload",
			Target: c.Ref(), Details: map[string]any{"name": c.Name, "version": c.Version}}
		if err := a.d.Audit.RecordAudit(ctx, e); err != nil {
			// The version is stored; losing its audit line must not fail the upload.
			a.d.Log.Error("audit record failed", "action", e.Action, "target", e.Target, "err", err)
		}
	}
	sum := ports.ContractSummary{Name: c.Name, Version: c.Version, Description: c.Description, StepCount: len(c.Steps),
		CreatedBy: p.ID, CreatedAt: now.Truncate(time.Microsecond), LatestVersion: c.Version}
	return c, sum, nil
}

// DeleteContractVersion deletes one version no thread was started with
// (data.delete, administrators). Audited.
func (a *Contracts) DeleteContractVersion(ctx context.Context, name string, version int) error {
	p, err := Require(ctx, domain.PermDataDelete)
	if err != nil {
		return err
	}
	if version < 1 {
		return domain.Invalid("version", "version must be a positive integer")
	}
	if a.d.Eraser == nil {
		return domain.E(domain.KindUnavailable, domain.CodeUnavailable, "contract deletion is not available")
	}
	if err := a.d.Eraser.DeleteContractVersion(ctx, name, version); err != nil {
		return err
	}
	if a.d.Deleted != nil {
		a.d.Deleted(name, version)
	}
	ref := name + ":" + strconv.Itoa(version)
	a.audit(ctx, p, "contract.delete", ref, map[string]any{"name": name, "version": version})
	return nil
}

func (a *Contracts) audit(ctx context.Context, p domain.Principal, action, target string, details map[string]any) {
	if a.d.Audit == nil || a.d.NewID == nil {
		return
	}
	e := ports.AuditEntry{ID: a.d.NewID(), At: a.d.Clock.Now().UTC(), ActorKind: p.Kind, ActorID: p.ID, Action: action,
		Target: target, Details: details}
	if err := a.d.Audit.RecordAudit(ctx, e); err != nil {
		// The change is made; losing its audit line must not fail it.
		a.d.Log.Error("audit record failed", "action", e.Action, "target", e.Target, "err", err)
	}
}

// CheckContract parses src without storing it (a preview for authors). It
// needs contracts.read.
func (a *Contracts) CheckContract(ctx context.Context, src []byte) (domain.Contract, error) {
	if _, err := Require(ctx, domain.PermContractsRead); err != nil {
		return domain.Contract{}, err
	}
	return domain.ParseContract(src)
}

// GetContract returns one version (0 = latest). It needs contracts.read.
func (a *Contracts) GetContract(ctx context.Context, name string, version int) (domain.Contract, error) {
	if _, err := Require(ctx, domain.PermContractsRead); err != nil {
		return domain.Contract{}, err
	}
	return a.d.Store.GetContract(ctx, name, version)
}

// GetContractSource returns one version's contract, its YAML as uploaded and
// its metadata (0 = latest). It needs contracts.read.
func (a *Contracts) GetContractSource(ctx context.Context, name string, version int) (domain.Contract, []byte, ports.ContractSummary, error) {
	if _, err := Require(ctx, domain.PermContractsRead); err != nil {
		return domain.Contract{}, nil, ports.ContractSummary{}, err
	}
	src, sum, err := a.d.Store.GetContractSource(ctx, name, version)
	if err != nil {
		return domain.Contract{}, nil, ports.ContractSummary{}, err
	}
	c, err := a.d.Store.GetContract(ctx, name, sum.Version)
	if err != nil {
		return domain.Contract{}, nil, ports.ContractSummary{}, err
	}
	return c, src, sum, nil
}

// ListContracts returns the latest version of every contract. It needs
// contracts.read.
func (a *Contracts) ListContracts(ctx context.Context) ([]ports.ContractSummary, error) {
	if _, err := Require(ctx, domain.PermContractsRead); err != nil {
		return nil, err
	}
	return a.d.Store.ListContracts(ctx)
}

// ListContractVersions returns every version of one contract, newest first.
// It needs contracts.read.
func (a *Contracts) ListContractVersions(ctx context.Context, name string) ([]ports.ContractSummary, error) {
	if _, err := Require(ctx, domain.PermContractsRead); err != nil {
		return nil, err
	}
	return a.d.Store.ListContractVersions(ctx, name)
}
