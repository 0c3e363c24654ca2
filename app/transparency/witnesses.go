package transparency

// Witness cosignatures (C2SP tlog-witness): after signing, the engine
// submits the latest checkpoint to every configured witness with a
// consistency proof from the size that witness cosigned last; the witness
// cosigns only if the log grew append-only since, so the operator cannot show
// two histories and get both cosigned. Cosignature lines are stored beside
// the checkpoint and served appended to its note.
//
// Cosigning is off the signing path: each witness has its own goroutine
// (started and stopped by SignCheckpointHandler.Run) that takes the newest
// checkpoint offered to it, so a witness that is slow or silently drops
// traffic delays only its own cosignature, never the signing of the next
// checkpoint nor the other witnesses.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/threadengine/engine/ports"
)

// DefaultWitnessTimeout bounds one request to a witness (Deps.WitnessTimeout).
const DefaultWitnessTimeout = 10 * time.Second

// Witness is one configured witness: its verifier key (a C2SP cosignature
// key) and the client that reaches it.
type Witness struct {
	Verifier note.Verifier
	Client   ports.Witness
}

// witnessing submits checkpoints to the witnesses, each from its own
// goroutine (start).
type witnessing struct {
	tree        ports.LogTree
	checkpoints ports.Checkpoints
	list        []Witness
	log         *slog.Logger
	clock       ports.Clock
	// timeout bounds each request to a witness.
	timeout time.Duration
}

// key names a witness (name and key id): one row per witness and size.
func witnessKey(v note.Verifier) string { return fmt.Sprintf("%s+%08x", v.Name(), v.KeyHash()) }

// newest is a one-checkpoint mailbox: an offer replaces the checkpoint not
// yet taken, so a witness busy with a request skips the checkpoints signed
// meanwhile and gets the newest next. offer never blocks.
type newest struct {
	mu    sync.Mutex
	cp    ports.SignedCheckpoint
	has   bool
	ready chan struct{} // one pending wake-up at most
}

func newNewest() *newest { return &newest{ready: make(chan struct{}, 1)} }

func (n *newest) offer(cp ports.SignedCheckpoint) {
	n.mu.Lock()
	if n.has && n.cp.Size > cp.Size {
		n.mu.Unlock()
		return // keep the newer one
	}
	n.cp, n.has = cp, true
	n.mu.Unlock()
	select {
	case n.ready <- struct{}{}:
	default:
	}
}

func (n *newest) take() (ports.SignedCheckpoint, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	cp, ok := n.cp, n.has
	n.cp, n.has = ports.SignedCheckpoint{}, false
	return cp, ok
}

// start runs one goroutine per witness until ctx ends. offer hands them
// a checkpoint (never blocks); wait returns once every goroutine stopped.
func (w *witnessing) start(ctx context.Context) (offer func(ports.SignedCheckpoint), wait func()) {
	var wg sync.WaitGroup
	boxes := make([]*newest, len(w.list))
	for i, wt := range w.list {
		boxes[i] = newNewest()
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.serve(ctx, wt, boxes[i])
		}()
	}
	offer = func(cp ports.SignedCheckpoint) {
		if cp.Size == 0 {
			return
		}
		for _, b := range boxes {
			b.offer(cp)
		}
	}
	return offer, wg.Wait
}

// serve submits the newest checkpoint in box to wt until ctx ends. known is
// the witness's latest cosigned size as far as this process knows (0 at
// start: the witness's 409 answer tells the real one).
func (w *witnessing) serve(ctx context.Context, wt Witness, box *newest) {
	var known int64
	var health witnessHealth
	for {
		select {
		case <-ctx.Done():
			return
		case <-box.ready:
		}
		cp, ok := box.take()
		if !ok {
			continue
		}
		var err error
		if _, open := note.Open([]byte(cp.Note), note.VerifierList(wt.Verifier)); open != nil {
			err = w.one(ctx, wt, cp, &known)
		} // else cosigned already (by this replica or another)
		if ctx.Err() != nil {
			return
		}
		w.report(wt, cp, err, &health)
	}
}

// report logs a witness's failures rate-limited (witnessHealth) and its
// recovery.
func (w *witnessing) report(wt Witness, cp ports.SignedCheckpoint, err error, health *witnessHealth) {
	name := wt.Verifier.Name()
	if err == nil {
		if failures, recovered := health.succeeded(); recovered {
			w.log.Info("transparency log: a witness cosigns again", "witness", name, "size", cp.Size, "failures", failures)
		}
		return
	}
	state := witnessFailing
	if errors.Is(err, errForked) {
		state = witnessRefusesFork
	}
	if warn, suppressed := health.failed(w.clock.Now(), state); warn {
		w.log.Warn("transparency log: a witness did not cosign the checkpoint", "witness", name,
			"size", cp.Size, "err", err, "failures_not_logged", suppressed)
	}
}

// errForked: the witness holds another tree of this size or larger that
// the log's cannot be proved consistent with.
var errForked = errors.New("the witness refused the checkpoint: it cosigned a checkpoint this log's tree is not consistent with (a fork of the log, or its state was reset)")

// one submits cp to wt (twice at most: a 409 tells the witness's size),
// each request bounded by w.timeout, and stores the cosignature.
func (w *witnessing) one(ctx context.Context, wt Witness, cp ports.SignedCheckpoint, known *int64) error {
	key := witnessKey(wt.Verifier)
	old := *known
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
		rctx, cancel := context.WithTimeout(ctx, w.timeout)
		lines, err := wt.Client.AddCheckpoint(rctx, old, proof, []byte(cp.Note))
		cancel()
		var conflict *ports.WitnessConflict
		if errors.As(err, &conflict) {
			if conflict.Size == old {
				return errForked // same size, another root
			}
			old = conflict.Size
			*known = old
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
		*known = cp.Size
		return nil
	}
	return errForked
}
