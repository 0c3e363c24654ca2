package transparency

// The StepInclusion query: a step's leaf and its inclusion proof, for a
// caller who may see the step's thread.

import (
	"context"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// StepInclusion is a step's leaf and its inclusion proof in a checkpoint.
type StepInclusion struct {
	Index      int64
	Data       []byte
	Proof      Proof
	Checkpoint ports.SignedCheckpoint
}

// StepInclusionHandler proves one step's inclusion by step id; one of the
// Queries. A leaf names its thread, so it needs threads.read and a caller
// who may see that thread.
type StepInclusionHandler struct {
	leaves  ports.LogLeaves
	tree    ports.LogTree
	threads ThreadVisibility
	signer  *checkpointSigner
}

// NewStepInclusionHandler builds StepInclusion: leaves and tree are the log,
// threads decides what the caller may see, signer gives a checkpoint that
// covers the step.
func NewStepInclusionHandler(leaves ports.LogLeaves, tree ports.LogTree, threads ThreadVisibility, signer *checkpointSigner) StepInclusionHandler {
	return StepInclusionHandler{leaves: leaves, tree: tree, threads: threads, signer: signer}
}

// Handle proves the step's inclusion in a checkpoint covering it (signed now
// if the latest is older).
func (h StepInclusionHandler) Handle(ctx context.Context, stepID string) (StepInclusion, error) {
	if _, err := authz.Require(ctx, domain.PermThreadsRead); err != nil {
		return StepInclusion{}, err
	}
	if err := h.tree.Flush(ctx); err != nil {
		return StepInclusion{}, err
	}
	rec, err := h.leaves.StepLeaf(ctx, stepID)
	if err != nil {
		return StepInclusion{}, err
	}
	// Not visible reads exactly like unknown.
	if ts, err := h.threads.Handle(ctx, []string{rec.Leaf.ThreadID}); err != nil {
		return StepInclusion{}, err
	} else if len(ts) == 0 {
		return StepInclusion{}, domain.NotFound("step " + stepID + " in the transparency log")
	}
	c, err := h.signer.covering(ctx, rec.Index+1)
	if err != nil {
		return StepInclusion{}, err
	}
	p, err := tlog.ProveRecord(c.Size, rec.Index, h.tree.Hashes(ctx))
	if err != nil {
		return StepInclusion{}, err
	}
	return StepInclusion{Index: rec.Index, Data: rec.Data, Proof: Proof(p), Checkpoint: c}, nil
}
