package contracts

// The Read query: one version with its source (GET /v1/contracts/{name},
// GET /v1/contracts/{name}/versions/{version}).

import (
	"context"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Version is a stored version: its contract, its source as written (in
// Summary.SourceFormat) and its metadata.
type Version struct {
	Contract domain.Contract
	Source   []byte
	Summary  ports.ContractSummary
}

// ReadHandler reads versions; one of the Queries.
type ReadHandler struct {
	sources  ports.ContractSources
	versions ports.ContractReader
}

// NewReadHandler reads sources and compiled versions.
func NewReadHandler(sources ports.ContractSources, versions ports.ContractReader) ReadHandler {
	return ReadHandler{sources: sources, versions: versions}
}

// Handle returns one version (0 = latest); it needs contracts.read. A name
// no contract can have is not found, as an unknown one.
func (h ReadHandler) Handle(ctx context.Context, name string, version int) (Version, error) {
	if _, err := authz.Require(ctx, domain.PermContractsRead); err != nil {
		return Version{}, err
	}
	if err := domain.CheckContractName(name); err != nil {
		return Version{}, err
	}
	if version < 0 {
		return Version{}, domain.Invalid("version", "version must be a positive integer")
	}
	src, sum, err := h.sources.GetContractSource(ctx, name, version)
	if err != nil {
		return Version{}, err
	}
	c, err := h.versions.GetContract(ctx, name, sum.Version)
	if err != nil {
		return Version{}, err
	}
	return Version{Contract: c, Source: src, Summary: sum}, nil
}
