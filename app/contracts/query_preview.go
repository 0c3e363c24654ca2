package contracts

// The Preview query: compiles a source without storing it
// (POST /v1/contracts/preview).

import (
	"context"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Preview is a checked source: every problem with its line, warnings, and
// for a valid source the compiled contract, its graph and content hash.
type Preview struct {
	Compiled
	Graph       domain.ContractGraph
	ContentHash string
}

// PreviewHandler checks sources; one of the Queries.
type PreviewHandler struct {
	versions   ports.ContractReader
	classifier bool // a classifier is configured (semantic rules are judged)
}

// NewPreviewHandler resolves includes with versions; classifier says
// whether semantic rules can be judged (else preview warns).
func NewPreviewHandler(versions ports.ContractReader, classifier bool) PreviewHandler {
	return PreviewHandler{versions: versions, classifier: classifier}
}

// Handle needs contracts.read; an invalid source is a Preview, not an
// error.
func (h PreviewHandler) Handle(ctx context.Context, src []byte) (Preview, error) {
	if _, err := authz.Require(ctx, domain.PermContractsRead); err != nil {
		return Preview{}, err
	}
	cs, err := compile(ctx, src, h.versions)
	if err != nil {
		return Preview{}, err
	}
	cs.noteClassifier(h.classifier)
	out := Preview{Compiled: cs}
	if cs.Valid() {
		out.Graph, out.ContentHash = cs.Contract.Graph(), cs.Contract.ContentHash()
	}
	return out, nil
}
