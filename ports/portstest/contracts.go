package portstest

import (
	"context"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Contracts is an in-memory ports.Contracts holding one parsed version per
// name (its latest); it stores nothing.
type Contracts map[string]domain.Contract

var _ ports.Contracts = Contracts{}

// PutContractVersion stores nothing.
func (f Contracts) PutContractVersion(context.Context, domain.Contract, []byte, string, time.Time) error {
	return nil
}

// GetContract returns the contract named name at its version (0: latest).
func (f Contracts) GetContract(_ context.Context, name string, version int) (domain.Contract, error) {
	c, ok := f[name]
	if !ok || version != 0 && version != c.Version {
		return domain.Contract{}, domain.NotFound("contract")
	}
	return c, nil
}

// GetContractSource has no sources to return.
func (f Contracts) GetContractSource(context.Context, string, int) ([]byte, ports.ContractSummary, error) {
	return nil, ports.ContractSummary{}, domain.NotFound("contract")
}

// ListContracts lists every contract's version.
func (f Contracts) ListContracts(context.Context) ([]ports.ContractSummary, error) {
	var out []ports.ContractSummary
	for _, x := range f {
		out = append(out, ports.ContractSummary{Name: x.Name, Version: x.Version, LatestVersion: x.Version})
	}
	return out, nil
}

// ListContractVersions lists the one version of name.
func (f Contracts) ListContractVersions(_ context.Context, name string) ([]ports.ContractSummary, error) {
	x, ok := f[name]
	if !ok {
		return nil, domain.NotFound("contract")
	}
	return []ports.ContractSummary{{Name: x.Name, Version: x.Version}}, nil
}
