package app

// The VerifyIntegrity query: recomputes a thread's hash chain.

import (
	"context"

	"github.com/threadengine/engine/domain"
)

// VerifyIntegrityHandler checks a thread's hash chain; one of Threads' Queries.
type VerifyIntegrityHandler struct{ t *Threads }

// Handle recomputes the thread's hash chain from the stored
// activities (content hashes recomputed from context and metadata).
func (h VerifyIntegrityHandler) Handle(ctx context.Context, threadID string) (domain.ChainStatus, error) {
	t := h.t
	p, err := Require(ctx, domain.PermThreadsRead)
	if err != nil {
		return domain.ChainStatus{}, err
	}
	th, err := t.store.GetThread(ctx, threadID)
	if err != nil {
		return domain.ChainStatus{}, err
	}
	if err := checkVisible(p, &th, t.now()); err != nil {
		return domain.ChainStatus{}, err
	}
	acts, err := t.store.ListActivities(ctx, threadID)
	if err != nil {
		return domain.ChainStatus{}, err
	}
	links := make([]domain.ChainLink, len(acts))
	for i, a := range acts {
		links[i] = a.ChainLink()
	}
	st := t.keys.Keyring().VerifyChain(links)
	domain.CheckHead(&st, links, th.StepCount, th.LastHash)
	return st, nil
}
