package threads

// The VerifyIntegrity query: recomputes a thread's hash chain and checks its
// head against the thread row.

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
	keys    domain.ChainKeyring // verifies chain version 1 links
	clock   ports.Clock
}

// NewVerifyIntegrityHandler builds VerifyIntegrity over the chain keys'
// keyring.
func NewVerifyIntegrityHandler(threads ports.ThreadGetter, steps ports.StepLog, keys domain.ChainKeyring, clock ports.Clock) VerifyIntegrityHandler {
	return VerifyIntegrityHandler{threads: threads, steps: steps, keys: keys, clock: clock}
}

// Handle recomputes the thread's hash chain from the stored activities
// (content hashes recomputed from context and metadata, version 2 hashes
// from the step records) and checks its head against the count and hash its
// thread row records.
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
		links[i] = a.ChainLink()
	}
	st := h.keys.VerifyChain(links)
	domain.CheckHead(&st, links, th.StepCount, th.LastHash)
	return st, nil
}
