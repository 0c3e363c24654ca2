package transparency

// Witness cosignatures (C2SP tlog-witness): after signing, the engine
// submits the latest checkpoint to every configured witness with a
// consistency proof from the size that witness cosigned last; the witness
// cosigns only if the log grew append-only since, so the operator cannot show
// two histories and get both cosigned. Cosignature lines are stored beside
// the checkpoint and served appended to its note.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/threadengine/engine/ports"
)

// Witness is one configured witness: its verifier key (a C2SP cosignature
// key) and the client that reaches it.
type Witness struct {
	Verifier note.Verifier
	Client   ports.Witness
}

// witnessing submits checkpoints to the witnesses, one submission at a
// time in this process.
type witnessing struct {
	tree        ports.LogTree
	checkpoints ports.Checkpoints
	list        []Witness
	log         *slog.Logger
	mu          sync.Mutex
	// known is each witness's latest cosigned size as far as this process
	// knows (0 at start: the witness's 409 answer tells the real one).
	known map[string]int64
}

// key names a witness (name and key id): one row per witness and size.
func witnessKey(v note.Verifier) string { return fmt.Sprintf("%s+%08x", v.Name(), v.KeyHash()) }

// cosign asks every witness that has not cosigned cp yet for its
// cosignature; failures are logged (the checkpoint stays valid without).
func (w *witnessing) cosign(ctx context.Context, cp ports.SignedCheckpoint) {
	if len(w.list) == 0 || cp.Size == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, wt := range w.list {
		if _, err := note.Open([]byte(cp.Note), note.VerifierList(wt.Verifier)); err == nil {
			continue // cosigned already
		}
		if err := w.one(ctx, wt, cp); err != nil && ctx.Err() == nil {
			w.log.Warn("transparency log: a witness did not cosign the checkpoint", "witness", wt.Verifier.Name(),
				"size", cp.Size, "err", err)
		}
	}
}

// errForked: the witness holds another tree of this size or larger that
// the log's cannot be proved consistent with.
var errForked = errors.New("the witness refused the checkpoint: it cosigned a checkpoint this log's tree is not consistent with (a fork of the log, or its state was reset)")

func (w *witnessing) one(ctx context.Context, wt Witness, cp ports.SignedCheckpoint) error {
	key := witnessKey(wt.Verifier)
	old := w.known[key]
	for attempt := 0; attempt < 2; attempt++ {
		if old > cp.Size {
			return nil // another replica submitted a newer checkpoint; the next round submits ours
		}
		var proof tlog.TreeProof
		if old > 0 && old < cp.Size {
			p, err := tlog.ProveTree(cp.Size, old, w.tree.Hashes(ctx))
			if err != nil {
				return err
			}
			proof = p
		}
		lines, err := wt.Client.AddCheckpoint(ctx, old, proof, []byte(cp.Note))
		var conflict *ports.WitnessConflict
		if errors.As(err, &conflict) {
			if conflict.Size == old {
				return errForked // same size, another root
			}
			old = conflict.Size
			w.known[key] = old
			continue
		}
		if err != nil {
			return err
		}
		n, err := note.Open([]byte(cp.Note+string(lines)), note.VerifierList(wt.Verifier))
		if err != nil {
			return fmt.Errorf("the witness's answer does not verify with its key: %w", err)
		}
		var own strings.Builder
		for _, s := range n.Sigs {
			own.WriteString("— " + s.Name + " " + s.Base64 + "\n")
		}
		if err := w.checkpoints.AddCosignature(ctx, cp.Size, key, own.String()); err != nil {
			return err
		}
		w.known[key] = cp.Size
		return nil
	}
	return errForked
}
