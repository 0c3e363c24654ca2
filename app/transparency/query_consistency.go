package transparency

// The Consistency query: a proof that one tree size is a prefix of another.

import (
	"context"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/threadengine/engine/ports"
)

// ConsistencyHandler proves the log was only appended to between two sizes;
// one of the Queries. It is public (the proof holds hashes only).
type ConsistencyHandler struct {
	tree       ports.LogTree
	checkpoint CheckpointHandler
}

// NewConsistencyHandler builds Consistency over the tree; checkpoint gives
// the newer size when none is asked.
func NewConsistencyHandler(tree ports.LogTree, checkpoint CheckpointHandler) ConsistencyHandler {
	return ConsistencyHandler{tree: tree, checkpoint: checkpoint}
}

// Handle proves the tree of size oldSize is a prefix of the tree of size
// newSize (newSize ≤ 0: the latest checkpoint's); it returns the proof and
// newSize.
func (h ConsistencyHandler) Handle(ctx context.Context, oldSize, newSize int64) (Proof, int64, error) {
	if newSize <= 0 {
		c, err := h.checkpoint.Handle(ctx, -1)
		if err != nil {
			return nil, 0, err
		}
		newSize = c.Size
	}
	st, err := h.tree.LogState(ctx)
	if err != nil {
		return nil, 0, err
	}
	switch {
	case newSize > st.Size:
		return nil, 0, errRange("new", "new is larger than the log")
	case oldSize < 1 || oldSize > newSize:
		return nil, 0, errRange("old", "old must be at least 1 and at most new")
	}
	p, err := tlog.ProveTree(newSize, oldSize, h.tree.Hashes(ctx))
	return Proof(p), newSize, err
}
