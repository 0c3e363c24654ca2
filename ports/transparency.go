package ports

import (
	"context"
	"strconv"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/threadengine/engine/domain"
)

// LogLeafRecord is one leaf of the transparency log as stored.
type LogLeafRecord struct {
	Index int64
	Leaf  domain.LogLeaf
	// Data is the leaf's stored bytes; Stored the leaf hash the tree holds
	// for Index (they differ only if a row was edited).
	Data   []byte
	Stored tlog.Hash
}

// SignedCheckpoint is a checkpoint as published: the signed note's text.
type SignedCheckpoint struct {
	Size      int64
	Root      tlog.Hash
	Note      string
	CreatedAt time.Time
}

// LogState is the log's size and whether every step recorded before the log
// existed has been appended (after that, a stored step without a leaf was
// not written by the engine).
type LogState struct {
	Size       int64
	Backfilled bool
}

// TransparencyLog reads the installation's transparency log and keeps its
// signed checkpoints. Leaves are appended by the thread store inside the
// transactions that write steps and delete threads. It is made of small
// ports: a use case takes the one it uses.
type TransparencyLog interface {
	LogTree
	LogLeaves
	Checkpoints
}

// LogTree is the log's Merkle tree.
type LogTree interface {
	LogState(ctx context.Context) (LogState, error)
	// Flush appends the leaves queued by committed steps to the tree.
	Flush(ctx context.Context) error
	// Hashes reads the tree's committed stored hashes.
	Hashes(ctx context.Context) tlog.HashReader
}

// LogLeaves reads the log's leaves.
type LogLeaves interface {
	// ThreadLeaves returns every leaf naming these threads (steps and
	// tombstones), by thread, in log order; leaves still queued come last,
	// with Index -1.
	ThreadLeaves(ctx context.Context, threadIDs []string) (map[string][]LogLeafRecord, error)
	// StepLeaf returns the leaf of one step; not found if it has none.
	StepLeaf(ctx context.Context, stepID string) (LogLeafRecord, error)
}

// Checkpoints keeps the log's signed checkpoints.
type Checkpoints interface {
	// Checkpoint returns the signed checkpoint of exactly size, or with
	// size < 0 the latest; not found if none.
	Checkpoint(ctx context.Context, size int64) (SignedCheckpoint, error)
	// CheckpointAtLeast returns the oldest checkpoint of at least size.
	CheckpointAtLeast(ctx context.Context, size int64) (SignedCheckpoint, error)
	// SaveCheckpoint stores c (a checkpoint of that size already stored is kept).
	SaveCheckpoint(ctx context.Context, c SignedCheckpoint) error
	// AddCosignature stores a witness's cosignature line(s) of the
	// checkpoint of size (one per witness and size: a later one is
	// dropped); Checkpoint returns the note with them appended.
	AddCosignature(ctx context.Context, size int64, witness, lines string) error
}

type deletionReasonKey struct{}

// WithDeletionReason tells ThreadEraser.DeleteThreads why threads are deleted
// (domain.DeletedByRetention, DeletedByErasure): their tombstones in the
// transparency log say so.
func WithDeletionReason(ctx context.Context, reason string) context.Context {
	return context.WithValue(ctx, deletionReasonKey{}, reason)
}

// DeletionReason is the reason WithDeletionReason set (DeletedByOperator if none).
func DeletionReason(ctx context.Context) string {
	if r, ok := ctx.Value(deletionReasonKey{}).(string); ok && r != "" {
		return r
	}
	return domain.DeletedByOperator
}

// Witness is one witness of the log (C2SP tlog-witness): AddCheckpoint
// submits a signed checkpoint with a consistency proof from oldSize (the
// latest size the witness cosigned) and returns its cosignature lines; a
// *WitnessConflict says oldSize is not the witness's latest size.
type Witness interface {
	AddCheckpoint(ctx context.Context, oldSize int64, proof []tlog.Hash, checkpoint []byte) ([]byte, error)
}

// WitnessConflict: the witness's latest cosigned size is Size (or it saw
// another root at that size).
type WitnessConflict struct{ Size int64 }

func (e *WitnessConflict) Error() string {
	return "witness: its latest cosigned checkpoint has size " + strconv.FormatInt(e.Size, 10)
}
