package contracts

// The List and ListVersions queries (GET /v1/contracts,
// GET /v1/contracts/{name}/versions).

import (
	"context"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// ListHandler lists the latest version of every contract; one of the
// Queries.
type ListHandler struct{ lister ports.ContractLister }

// NewListHandler lists from lister.
func NewListHandler(lister ports.ContractLister) ListHandler { return ListHandler{lister: lister} }

// Handle needs contracts.read.
func (h ListHandler) Handle(ctx context.Context) ([]ports.ContractSummary, error) {
	if _, err := authz.Require(ctx, domain.PermContractsRead); err != nil {
		return nil, err
	}
	return h.lister.ListContracts(ctx)
}

// ListVersionsHandler lists every version of one contract, newest first;
// one of the Queries.
type ListVersionsHandler struct{ lister ports.ContractLister }

// NewListVersionsHandler lists from lister.
func NewListVersionsHandler(lister ports.ContractLister) ListVersionsHandler {
	return ListVersionsHandler{lister: lister}
}

// Handle needs contracts.read.
func (h ListVersionsHandler) Handle(ctx context.Context, name string) ([]ports.ContractSummary, error) {
	if _, err := authz.Require(ctx, domain.PermContractsRead); err != nil {
		return nil, err
	}
	if err := domain.CheckContractName(name); err != nil {
		return nil, err
	}
	return h.lister.ListContractVersions(ctx, name)
}
