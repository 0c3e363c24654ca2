package transparency

// The Inclusion query: a proof that leaf N is in the tree of a size.

import (
	"context"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/threadengine/engine/ports"
)

// InclusionHandler proves a leaf's inclusion by index; one of the Queries.
// It is public (the proof holds hashes only).
type InclusionHandler struct {
	tree       ports.LogTree
	checkpoint CheckpointHandler
}

// NewInclusionHandler builds Inclusion over the tree; checkpoint gives the
// size when none is asked.
func NewInclusionHandler(tree ports.LogTree, checkpoint CheckpointHandler) InclusionHandler {
	return InclusionHandler{tree: tree, checkpoint: checkpoint}
}

// Handle proves leaf in the tree of size (size ≤ 0: the latest
// checkpoint's); it returns the proof and the size it is for.
func (h InclusionHandler) Handle(ctx context.Context, leaf, size int64) (Proof, int64, error) {
	if size <= 0 {
		c, err := h.checkpoint.Handle(ctx, -1)
		if err != nil {
			return nil, 0, err
		}
		size = c.Size
	}
	st, err := h.tree.LogState(ctx)
	if err != nil {
		return nil, 0, err
	}
	switch {
	case size > st.Size:
		return nil, 0, errRange("size", "size is larger than the log")
	case leaf < 0 || leaf >= size:
		return nil, 0, errRange("leaf", "leaf must be at least 0 and less than size")
	}
	p, err := tlog.ProveRecord(size, leaf, h.tree.Hashes(ctx))
	return Proof(p), size, err
}
