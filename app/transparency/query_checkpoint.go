package transparency

// The Checkpoint query: the signed checkpoint of the log now, or of a size.

import (
	"context"

	"golang.org/x/time/rate"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// freshPerSecond is how many checkpoints GET /v1/log/checkpoint may sign per
// second (past that it answers the latest, at most one interval old).
const freshPerSecond = 10

// CheckpointHandler answers signed checkpoints; one of the Queries. It is
// public (checkpoints hold hashes only).
type CheckpointHandler struct {
	checkpoints ports.Checkpoints
	signer      *checkpointSigner
	// fresh bounds the checkpoints the public endpoint signs on demand: an
	// anonymous flood of requests during ingest must not turn into a
	// flood of signed and stored checkpoints.
	fresh *rate.Limiter
}

// NewCheckpointHandler builds Checkpoint: it reads the stored checkpoints
// and signs one on demand through signer, as fresh allows.
func NewCheckpointHandler(checkpoints ports.Checkpoints, signer *checkpointSigner, fresh *rate.Limiter) CheckpointHandler {
	return CheckpointHandler{checkpoints: checkpoints, signer: signer, fresh: fresh}
}

// Handle returns a checkpoint of the log's current size (size < 0; signed
// now if the log grew since the latest, at most freshPerSecond times a
// second, else the latest) or the one of exactly size.
func (h CheckpointHandler) Handle(ctx context.Context, size int64) (ports.SignedCheckpoint, error) {
	if size >= 0 {
		return h.checkpoints.Checkpoint(ctx, size)
	}
	if h.fresh.Allow() {
		return h.signer.sign(ctx)
	}
	c, err := h.checkpoints.Checkpoint(ctx, -1)
	if err != nil && domain.KindOf(err) == domain.KindNotFound {
		return h.signer.sign(ctx)
	}
	return c, err
}
