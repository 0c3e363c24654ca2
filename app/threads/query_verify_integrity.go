package threads

// The VerifyIntegrity query: recomputes a thread's hash chain.

import (
	"context"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// VerifyIntegrityHandler checks a thread's hash chain; one of the Queries.
type VerifyIntegrityHandler struct {
	threads ports.ThreadGetter
	steps   ports.StepLog
	secrets map[string][]byte // the chain keys by version
	clock   ports.Clock
}

// NewVerifyIntegrityHandler builds VerifyIntegrity over the chain keys'
// secrets by version.
func NewVerifyIntegrityHandler(threads ports.ThreadGetter, steps ports.StepLog, secrets map[string][]byte, clock ports.Clock) VerifyIntegrityHandler {
	return VerifyIntegrityHandler{threads: threads, steps: steps, secrets: secrets, clock: clock}
}

// Handle recomputes the thread's hash chain from the stored
// activities (content hashes recomputed from context and metadata).
func (h VerifyIntegrityHandler) Handle(ctx context.Context, threadID string) (domain.ChainStatus, error) {
	p, err := authz.Require(ctx, domain.PermThreadsRead)
	if err != nil {
		return domain.ChainStatus{}, err
	}
	th, err := h.threads.GetThread(ctx, threadID)
	if err != nil {
		return domain.ChainStatus{}, err
	}
	if err := authz.CheckVisible(p, &th, now(h.clock)); err != nil {
		return domain.ChainStatus{}, err
	}
	acts, err := h.steps.ListActivities(ctx, threadID)
	if err != nil {
		return domain.ChainStatus{}, err
	}
	links := make([]domain.ChainLink, len(acts))
	for i, a := range acts {
		links[i] = domain.ChainLink{ThreadID: a.ThreadID, StepID: a.ID, StepName: a.StepName,
			ContentHash: domain.ContentHash(a.Context, a.Metadata), PrevHash: a.PrevHash, Hash: a.Hash,
			RecordedAt: a.RecordedAt}
	}
	return domain.VerifyChain(h.secrets, links), nil
}
