// Package transparency serves the installation's transparency log: it signs
// checkpoints (C2SP tlog-checkpoint in a C2SP signed note, Ed25519), answers
// inclusion and consistency proofs, and gives exports the proofs of their
// steps. The leaves themselves are appended by the thread store inside the
// transactions that write them (see adapters/threadstore/tlog.go); the
// format is specified in docs/integrators/verification.md.
package transparency

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
	"golang.org/x/time/rate"

	"github.com/threadengine/engine/app"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Deps wires a Log.
type Deps struct {
	Log ports.TransparencyLog
	// Signer signs checkpoints; its name is the log's origin.
	Signer note.Signer
	// Verifiers are every public key of the log, newest first.
	Verifiers []string
	// Queries decides which threads a caller may see (proofs by step).
	Queries *app.Queries
	Clock   ports.Clock
	Logger  *slog.Logger
}

// Log is the transparency log's use cases.
type Log struct {
	d  Deps
	mu sync.Mutex // one signing at a time in this process
	// fresh bounds the checkpoints the public endpoint signs on demand: an
	// anonymous flood of requests during ingest must not turn into a
	// flood of signed and stored checkpoints.
	fresh *rate.Limiter
}

// freshPerSecond is how many checkpoints GET /v1/log/checkpoint may sign per
// second (past that it answers the latest, at most one interval old).
const freshPerSecond = 10

// New returns the log's use cases.
func New(d Deps) *Log {
	if d.Clock == nil {
		d.Clock = ports.SystemClock{}
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	return &Log{d: d, fresh: rate.NewLimiter(freshPerSecond, freshPerSecond)}
}

// Origin is the log's name, the first line of its checkpoints.
func (l *Log) Origin() string { return l.d.Signer.Name() }

// Keys are the log's verifier keys, newest first (the one signing now first).
func (l *Log) Keys() []string { return append([]string(nil), l.d.Verifiers...) }

// Sign signs a checkpoint of the log's current size unless the latest
// checkpoint has that size already, and returns the latest checkpoint.
func (l *Log) Sign(ctx context.Context) (ports.SignedCheckpoint, error) {
	// Steps acknowledged before this call are in the checkpoint.
	if err := l.d.Log.Flush(ctx); err != nil {
		return ports.SignedCheckpoint{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st, err := l.d.Log.LogState(ctx)
	if err != nil {
		return ports.SignedCheckpoint{}, err
	}
	latest, err := l.d.Log.Checkpoint(ctx, -1)
	if err != nil && domain.KindOf(err) != domain.KindNotFound {
		return ports.SignedCheckpoint{}, err
	}
	if err == nil && latest.Size >= st.Size {
		return latest, nil
	}
	return l.signAt(ctx, st.Size)
}

// signAt signs a checkpoint of size (at most the log's size).
func (l *Log) signAt(ctx context.Context, size int64) (ports.SignedCheckpoint, error) {
	root, err := tlog.TreeHash(size, l.d.Log.Hashes(ctx))
	if err != nil {
		return ports.SignedCheckpoint{}, err
	}
	body := domain.Checkpoint{Origin: l.Origin(), Size: size, Root: root}.Text()
	signed, err := note.Sign(&note.Note{Text: body}, l.d.Signer)
	if err != nil {
		return ports.SignedCheckpoint{}, err
	}
	c := ports.SignedCheckpoint{Size: size, Root: root, Note: string(signed), CreatedAt: l.d.Clock.Now().UTC()}
	if err := l.d.Log.SaveCheckpoint(ctx, c); err != nil {
		return ports.SignedCheckpoint{}, err
	}
	// Another replica may have stored this size first: both signed the same
	// body, but a rotated key differs; the stored one is the published one.
	return l.d.Log.Checkpoint(ctx, size)
}

// Run signs a checkpoint every interval while the log grows, until ctx ends.
func (l *Log) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := l.Sign(ctx); err != nil && ctx.Err() == nil {
			l.d.Logger.Warn("transparency log: signing a checkpoint failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Checkpoint returns a checkpoint of the log's current size (size < 0;
// signed now if the log grew since the latest, at most freshPerSecond times
// a second, else the latest) or the one of exactly size.
func (l *Log) Checkpoint(ctx context.Context, size int64) (ports.SignedCheckpoint, error) {
	if size >= 0 {
		return l.d.Log.Checkpoint(ctx, size)
	}
	if l.fresh.Allow() {
		return l.Sign(ctx)
	}
	c, err := l.d.Log.Checkpoint(ctx, -1)
	if err != nil && domain.KindOf(err) == domain.KindNotFound {
		return l.Sign(ctx)
	}
	return c, err
}

// State is the log's size now.
func (l *Log) State(ctx context.Context) (ports.LogState, error) { return l.d.Log.LogState(ctx) }

// Proof is an inclusion or consistency proof: the hashes a verifier
// combines, in tlog's order.
type Proof []tlog.Hash

// errRange is a bad leaf or size.
func errRange(field, msg string) error { return domain.Invalid(field, "%s", msg) }

// Inclusion proves leaf in the tree of size (size ≤ 0: the latest
// checkpoint's); it returns the proof and the size it is for.
func (l *Log) Inclusion(ctx context.Context, leaf, size int64) (Proof, int64, error) {
	if size <= 0 {
		c, err := l.Checkpoint(ctx, -1)
		if err != nil {
			return nil, 0, err
		}
		size = c.Size
	}
	st, err := l.d.Log.LogState(ctx)
	if err != nil {
		return nil, 0, err
	}
	switch {
	case size > st.Size:
		return nil, 0, errRange("size", "size is larger than the log")
	case leaf < 0 || leaf >= size:
		return nil, 0, errRange("leaf", "leaf must be at least 0 and less than size")
	}
	p, err := tlog.ProveRecord(size, leaf, l.d.Log.Hashes(ctx))
	return Proof(p), size, err
}

// Consistency proves the tree of size oldSize is a prefix of the tree of
// size newSize (newSize ≤ 0: the latest checkpoint's).
func (l *Log) Consistency(ctx context.Context, oldSize, newSize int64) (Proof, int64, error) {
	if newSize <= 0 {
		c, err := l.Checkpoint(ctx, -1)
		if err != nil {
			return nil, 0, err
		}
		newSize = c.Size
	}
	st, err := l.d.Log.LogState(ctx)
	if err != nil {
		return nil, 0, err
	}
	switch {
	case newSize > st.Size:
		return nil, 0, errRange("new", "new is larger than the log")
	case oldSize < 1 || oldSize > newSize:
		return nil, 0, errRange("old", "old must be at least 1 and at most new")
	}
	p, err := tlog.ProveTree(newSize, oldSize, l.d.Log.Hashes(ctx))
	return Proof(p), newSize, err
}

// StepInclusion is a step's leaf and its inclusion proof in a checkpoint.
type StepInclusion struct {
	Index      int64
	Data       []byte
	Proof      Proof
	Checkpoint ports.SignedCheckpoint
}

// Step proves one step's inclusion, for a caller who may see its thread.
func (l *Log) Step(ctx context.Context, stepID string) (StepInclusion, error) {
	if _, err := app.Require(ctx, domain.PermThreadsRead); err != nil {
		return StepInclusion{}, err
	}
	if err := l.d.Log.Flush(ctx); err != nil {
		return StepInclusion{}, err
	}
	rec, err := l.d.Log.StepLeaf(ctx, stepID)
	if err != nil {
		return StepInclusion{}, err
	}
	// Not visible reads exactly like unknown.
	if ts, err := l.d.Queries.Threads(ctx, []string{rec.Leaf.ThreadID}); err != nil {
		return StepInclusion{}, err
	} else if len(ts) == 0 {
		return StepInclusion{}, domain.NotFound("step " + stepID + " in the transparency log")
	}
	c, err := l.covering(ctx, rec.Index+1)
	if err != nil {
		return StepInclusion{}, err
	}
	p, err := tlog.ProveRecord(c.Size, rec.Index, l.d.Log.Hashes(ctx))
	if err != nil {
		return StepInclusion{}, err
	}
	return StepInclusion{Index: rec.Index, Data: rec.Data, Proof: Proof(p), Checkpoint: c}, nil
}

// covering returns a checkpoint of at least size leaves, signing one if the
// latest is older (a just-written step is provable at once).
func (l *Log) covering(ctx context.Context, size int64) (ports.SignedCheckpoint, error) {
	c, err := l.d.Log.Checkpoint(ctx, -1)
	if err == nil && c.Size >= size {
		return c, nil
	}
	if err != nil && domain.KindOf(err) != domain.KindNotFound {
		return ports.SignedCheckpoint{}, err
	}
	c, err = l.Sign(ctx)
	if err != nil {
		return ports.SignedCheckpoint{}, err
	}
	if c.Size < size {
		return ports.SignedCheckpoint{}, errors.New("transparency log: the log is smaller than a leaf it holds")
	}
	return c, nil
}

// ThreadProofs are what an export carries to be verified offline: the
// checkpoint, and every leaf naming the thread with its inclusion proof.
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

// Proofs returns the leaves of threads with their inclusion proofs in one
// checkpoint covering them all (at least minSize leaves; one is signed when
// the latest is older). The caller has checked the threads are visible.
func (l *Log) Proofs(ctx context.Context, threadIDs []string, minSize int64) (ThreadProofs, error) {
	if err := l.d.Log.Flush(ctx); err != nil {
		return ThreadProofs{}, err
	}
	leaves, err := l.d.Log.ThreadLeaves(ctx, threadIDs)
	if err != nil {
		return ThreadProofs{}, err
	}
	need := minSize
	for _, ls := range leaves {
		for _, r := range ls {
			need = max(need, r.Index+1)
		}
	}
	c, err := l.covering(ctx, need)
	if err != nil {
		return ThreadProofs{}, err
	}
	out := ThreadProofs{Checkpoint: c, Leaves: map[string][]LeafProof{}}
	hr := l.d.Log.Hashes(ctx)
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
