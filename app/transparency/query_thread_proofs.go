package transparency

// The ThreadProofs query: what an export carries to be verified offline.

import (
	"context"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// ThreadProofs are the checkpoint, and every leaf naming the threads with
// its inclusion proof.
type ThreadProofs struct {
	Checkpoint ports.SignedCheckpoint
	Leaves     map[string][]LeafProof // by thread id
}

// LeafProof is one leaf and its inclusion proof in ThreadProofs.Checkpoint.
type LeafProof struct {
	Index int64
	Data  []byte
	Proof Proof
}

// ThreadProofsHandler gives the threads of an export their proofs; one of
// the Queries. Past threads.read it does not check which threads the caller
// may see: the export that asks (readmodel.Exports) read them through the
// caller's scope.
type ThreadProofsHandler struct {
	leaves ports.LogLeaves
	tree   ports.LogTree
	signer *checkpointSigner
}

// NewThreadProofsHandler builds ThreadProofs over the log; signer gives a
// checkpoint that covers the leaves.
func NewThreadProofsHandler(leaves ports.LogLeaves, tree ports.LogTree, signer *checkpointSigner) ThreadProofsHandler {
	return ThreadProofsHandler{leaves: leaves, tree: tree, signer: signer}
}

// Handle returns the leaves of threads with their inclusion proofs in one
// checkpoint covering them all (at least minSize leaves; one is signed when
// the latest is older).
func (h ThreadProofsHandler) Handle(ctx context.Context, threadIDs []string, minSize int64) (ThreadProofs, error) {
	if _, err := authz.Require(ctx, domain.PermThreadsRead); err != nil {
		return ThreadProofs{}, err
	}
	if err := h.tree.Flush(ctx); err != nil {
		return ThreadProofs{}, err
	}
	leaves, err := h.leaves.ThreadLeaves(ctx, threadIDs)
	if err != nil {
		return ThreadProofs{}, err
	}
	need := minSize
	for _, ls := range leaves {
		for _, r := range ls {
			need = max(need, r.Index+1)
		}
	}
	c, err := h.signer.covering(ctx, need)
	if err != nil {
		return ThreadProofs{}, err
	}
	out := ThreadProofs{Checkpoint: c, Leaves: map[string][]LeafProof{}}
	hr := h.tree.Hashes(ctx)
	for id, ls := range leaves {
		for _, r := range ls {
			if r.Index < 0 || r.Index >= c.Size {
				continue // queued after the flush: in the next export
			}
			p, err := tlog.ProveRecord(c.Size, r.Index, hr)
			if err != nil {
				return ThreadProofs{}, err
			}
			out.Leaves[id] = append(out.Leaves[id], LeafProof{Index: r.Index, Data: r.Data, Proof: Proof(p)})
		}
	}
	return out, nil
}
