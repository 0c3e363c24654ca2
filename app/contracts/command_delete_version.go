package contracts

// The DeleteVersion command (DELETE /v1/contracts/{name}/versions/{version}).

import (
	"context"
	"strconv"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// DeleteVersionHandler deletes unused versions; one of the Commands.
type DeleteVersionHandler struct {
	eraser  ports.ContractEraser
	deleted func(name string, version int)
	audit   Auditor
}

// NewDeleteVersionHandler deletes with eraser (nil: deletion is refused)
// and tells deleted (optional) about each deleted version.
func NewDeleteVersionHandler(eraser ports.ContractEraser, deleted func(name string, version int), audit Auditor) DeleteVersionHandler {
	return DeleteVersionHandler{eraser: eraser, deleted: deleted, audit: audit}
}

// Handle deletes one version no thread was started with (data.delete,
// administrators). Audited as contract.delete.
func (h DeleteVersionHandler) Handle(ctx context.Context, name string, version int) error {
	p, err := authz.Require(ctx, domain.PermDataDelete)
	if err != nil {
		return err
	}
	if err := domain.CheckContractName(name); err != nil {
		return err
	}
	if version < 1 {
		return domain.Invalid("version", "version must be a positive integer")
	}
	if h.eraser == nil {
		return domain.E(domain.KindUnavailable, domain.CodeUnavailable, "contract deletion is not available")
	}
	if err := h.eraser.DeleteContractVersion(ctx, name, version); err != nil {
		return err
	}
	if h.deleted != nil {
		h.deleted(name, version)
	}
	h.audit.record(ctx, p, "contract.delete", name+":"+strconv.Itoa(version), map[string]any{"name": name, "version": version})
	return nil
}
