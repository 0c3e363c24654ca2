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
// thread row records. The chain is read before the row, and again if it does
// not end at the row's head: steps appended between the reads are not a
// broken head (domain.CheckHeadSince).
func (h VerifyIntegrityHandler) Handle(ctx context.Context, threadID string) (domain.ChainStatus, error) {
	p, err := authz.Require(ctx, domain.PermThreadsRead)
	if err != nil {
		return domain.ChainStatus{}, err
	}
	first, err := h.steps.ListActivities(ctx, threadID)
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
	links := chainLinks(first)
	if head, n := domain.Head(links); n == th.StepCount() && head == th.LastHash() {
		st := h.keys.VerifyChain(links)
		domain.CheckHead(&st, links, th.StepCount(), th.LastHash())
		return st, nil
	}
	again, err := h.steps.ListActivities(ctx, threadID)
	if err != nil {
		return domain.ChainStatus{}, err
	}
	before := make(map[string]bool, len(first))
	for _, a := range first {
		before[a.ID] = true
	}
	links = chainLinks(again)
	st := h.keys.VerifyChain(links)
	domain.CheckHeadSince(&st, links, before, th.StepCount(), th.LastHash())
	return st, nil
}

func chainLinks(acts []ports.Activity) []domain.ChainLink {
	links := make([]domain.ChainLink, len(acts))
	for i, a := range acts {
		links[i] = a.ChainLink()
	}
	return links
}
