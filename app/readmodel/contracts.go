package readmodel

// The contract reads: one version (contractGraph, MCP get_contract) and the
// difference between two.

import (
	"context"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
)

// ContractReader reads contract versions (ports.Contracts' reading half
// contractGraph and processMap need).
type ContractReader interface {
	// GetContract returns one version; version 0 means the latest.
	GetContract(ctx context.Context, name string, version int) (domain.Contract, error)
}

// ContractHandler returns a contract version (0 = latest).
type ContractHandler struct {
	contracts ContractReader // nil: not found
}

// NewContractHandler builds the Contract query (contracts may be nil).
func NewContractHandler(contracts ContractReader) ContractHandler {
	return ContractHandler{contracts: contracts}
}

// Handle returns version version of contract name (contracts.read).
func (h ContractHandler) Handle(ctx context.Context, name string, version int) (domain.Contract, error) {
	if _, err := authz.Require(ctx, domain.PermContractsRead); err != nil {
		return domain.Contract{}, err
	}
	if h.contracts == nil {
		return domain.Contract{}, domain.NotFound("contract " + name)
	}
	return h.contracts.GetContract(ctx, name, version)
}

// ContractDiffHandler compares two versions of one contract.
type ContractDiffHandler struct{ contract ContractHandler }

// NewContractDiffHandler builds the ContractDiff query over Contract.
func NewContractDiffHandler(contract ContractHandler) ContractDiffHandler {
	return ContractDiffHandler{contract: contract}
}

// Handle compares versions from and to of contract name (0 = the latest).
func (h ContractDiffHandler) Handle(ctx context.Context, name string, from, to int) (domain.ContractDiff, error) {
	a, err := h.contract.Handle(ctx, name, from)
	if err != nil {
		return domain.ContractDiff{}, err
	}
	b, err := h.contract.Handle(ctx, name, to)
	if err != nil {
		return domain.ContractDiff{}, err
	}
	return domain.DiffContracts(a, b), nil
}
