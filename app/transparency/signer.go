package transparency

import (
	"context"
	"errors"
	"sync"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// checkpointSigner signs checkpoints of the log, one at a time in this
// process: what the signing command, the checkpoint query and the proofs
// (which need a checkpoint covering their leaves) share. The handlers hold
// it by pointer, so an Application has one.
type checkpointSigner struct {
	tree        ports.LogTree
	checkpoints ports.Checkpoints
	signer      note.Signer
	clock       ports.Clock
	mu          sync.Mutex // one signing at a time in this process
}

// sign signs a checkpoint of the log's current size unless the latest
// checkpoint has that size already, and returns the latest checkpoint.
func (s *checkpointSigner) sign(ctx context.Context) (ports.SignedCheckpoint, error) {
	// Steps acknowledged before this call are in the checkpoint.
	if err := s.tree.Flush(ctx); err != nil {
		return ports.SignedCheckpoint{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.tree.LogState(ctx)
	if err != nil {
		return ports.SignedCheckpoint{}, err
	}
	latest, err := s.checkpoints.Checkpoint(ctx, -1)
	if err != nil && domain.KindOf(err) != domain.KindNotFound {
		return ports.SignedCheckpoint{}, err
	}
	if err == nil && latest.Size >= st.Size {
		return latest, nil
	}
	return s.signAt(ctx, st.Size)
}

// signAt signs a checkpoint of size (at most the log's size).
func (s *checkpointSigner) signAt(ctx context.Context, size int64) (ports.SignedCheckpoint, error) {
	root, err := tlog.TreeHash(size, s.tree.Hashes(ctx))
	if err != nil {
		return ports.SignedCheckpoint{}, err
	}
	body := domain.Checkpoint{Origin: s.signer.Name(), Size: size, Root: root}.Text()
	signed, err := note.Sign(&note.Note{Text: body}, s.signer)
	if err != nil {
		return ports.SignedCheckpoint{}, err
	}
	c := ports.SignedCheckpoint{Size: size, Root: root, Note: string(signed), CreatedAt: s.clock.Now().UTC()}
	if err := s.checkpoints.SaveCheckpoint(ctx, c); err != nil {
		return ports.SignedCheckpoint{}, err
	}
	// Another replica may have stored this size first: both signed the same
	// body, but a rotated key differs; the stored one is the published one.
	return s.checkpoints.Checkpoint(ctx, size)
}

// covering returns a checkpoint of at least size leaves, signing one if the
// latest is older (a just-written step is provable at once).
func (s *checkpointSigner) covering(ctx context.Context, size int64) (ports.SignedCheckpoint, error) {
	c, err := s.checkpoints.Checkpoint(ctx, -1)
	if err == nil && c.Size >= size {
		return c, nil
	}
	if err != nil && domain.KindOf(err) != domain.KindNotFound {
		return ports.SignedCheckpoint{}, err
	}
	c, err = s.sign(ctx)
	if err != nil {
		return ports.SignedCheckpoint{}, err
	}
	if c.Size < size {
		return ports.SignedCheckpoint{}, errors.New("transparency log: the log is smaller than a leaf it holds")
	}
	return c, nil
}

// Proof is an inclusion or consistency proof: the hashes a verifier
// combines, in tlog's order.
type Proof []tlog.Hash

// errRange is a bad leaf or size.
func errRange(field, msg string) error { return domain.Invalid(field, "%s", msg) }
