package contracts

// The Publish command: stores a new contract version (POST /v1/contracts,
// PUT /v1/contracts/{name}).

import (
	"context"
	"time"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Publish is a version to store. Name is the contract the caller means to
// update (PUT): the source must name it, the contract must exist and the
// content must have changed. Without Name (POST) the source's name and
// version are stored as written (a new contract, or a higher version).
type Publish struct {
	Source []byte
	Name   string
}

// Published is the stored version.
type Published struct {
	Contract domain.Contract
	Summary  ports.ContractSummary
	Warnings []domain.ContractProblem
}

// PublishHandler stores contract versions; one of the Commands.
type PublishHandler struct {
	store    ports.ContractPublisher
	versions ports.ContractReader
	clock    ports.Clock
	audit    Auditor
	// classifier: semantic rules can be judged (else the answer warns).
	classifier bool
}

// NewPublishHandler publishes into store; versions resolves includes.
func NewPublishHandler(store ports.ContractPublisher, versions ports.ContractReader, clock ports.Clock, audit Auditor) PublishHandler {
	return PublishHandler{store: store, versions: versions, clock: clock, audit: audit}
}

// publishWith sets whether a semantic classifier is configured.
func publishWith(h PublishHandler, classifier bool) PublishHandler {
	h.classifier = classifier
	return h
}

// Handle needs contracts.write. An invalid source gives invalid_contract
// with every problem (each with its line); a version not above the latest
// contract_version_conflict; for an update, an unknown contract not_found
// and unchanged content contract_unchanged. Audited as contract.upload.
func (h PublishHandler) Handle(ctx context.Context, req Publish) (Published, error) {
	p, err := authz.Require(ctx, domain.PermContractsWrite)
	if err != nil {
		return Published{}, err
	}
	update := req.Name != ""
	if update {
		if err := domain.CheckContractName(req.Name); err != nil {
			return Published{}, err
		}
	}
	cs, err := compileValid(ctx, req.Source, h.versions, req.Name, "updated")
	if err != nil {
		return Published{}, err
	}
	cs.noteClassifier(h.classifier)
	c := cs.Contract
	now := h.clock.Now().UTC()
	v := ports.NewContractVersion{Contract: c, Source: req.Source, SourceFormat: cs.Format, ContentHash: c.ContentHash(),
		CreatedBy: p.ID, At: now, Update: update}
	if err := h.store.PublishContractVersion(ctx, v); err != nil {
		return Published{}, err
	}
	h.audit.record(ctx, p, "contract.upload", c.Ref(), map[string]any{"name": c.Name, "version": c.Version,
		"format": string(cs.Format), "update": update})
	sum := ports.ContractSummary{Name: c.Name, Version: c.Version, Description: c.Description, StepCount: len(c.Steps),
		CreatedBy: p.ID, CreatedAt: now.Truncate(time.Microsecond), LatestVersion: c.Version, SourceFormat: cs.Format,
		ContentHash: v.ContentHash}
	return Published{Contract: c, Summary: sum, Warnings: cs.Warnings}, nil
}
