package transparency

// The SignCheckpoint command: signs a checkpoint of the log as it is now.

import (
	"context"
	"log/slog"
	"time"

	"github.com/threadengine/engine/ports"
)

// SignCheckpointHandler signs a checkpoint of the log's current size; one
// of the Commands. The engine runs it every interval (Run); it is not a
// route.
type SignCheckpointHandler struct {
	signer    *checkpointSigner
	log       *slog.Logger
	witnesses *witnessing
}

// withWitnesses makes Run submit each checkpoint to the witnesses.
func (h SignCheckpointHandler) withWitnesses(w *witnessing) SignCheckpointHandler {
	h.witnesses = w
	return h
}

// NewSignCheckpointHandler builds SignCheckpoint over the shared signer.
func NewSignCheckpointHandler(signer *checkpointSigner, log *slog.Logger) SignCheckpointHandler {
	return SignCheckpointHandler{signer: signer, log: log}
}

// Handle signs a checkpoint of the log's current size unless the latest
// checkpoint has that size already, and returns the latest checkpoint.
func (h SignCheckpointHandler) Handle(ctx context.Context) (ports.SignedCheckpoint, error) {
	return h.signer.sign(ctx)
}

// Run signs a checkpoint every interval while the log grows, and has the
// witnesses (if any) cosign the latest, until ctx ends. The witnesses are
// asked from their own goroutines, started and stopped here: signing never
// waits for a witness.
func (h SignCheckpointHandler) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = time.Second
	}
	offer := func(ports.SignedCheckpoint) {}
	if h.witnesses != nil && len(h.witnesses.list) > 0 {
		wctx, stop := context.WithCancel(ctx)
		var wait func()
		offer, wait = h.witnesses.start(wctx)
		defer func() { stop(); wait() }()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		cp, err := h.Handle(ctx)
		if err != nil && ctx.Err() == nil {
			h.log.Warn("transparency log: signing a checkpoint failed", "err", err)
		}
		if err == nil {
			offer(cp)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
