package decisions

// The Next query: the paths open to the caller from now (GraphQL next, MCP
// next_steps, sdk/js thread.next).

import (
	"context"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// NextHandler answers next; one of the thread Queries (threads.Application).
type NextHandler struct{ read decisionReader }

// NewNextHandler builds Next.
func NewNextHandler(grants ports.Grants, contracts ThreadContracts, clock ports.Clock) NextHandler {
	return NextHandler{read: decisionReader{grants: grants, contracts: contracts, clock: clock}}
}

// Handle lists domain.Next's paths on one snapshot of the thread: no
// ranking, and only each path's first action is judged now.
func (h NextHandler) Handle(ctx context.Context, threadID string) (domain.NextDecision, error) {
	s, err := h.read.load(ctx, threadID)
	if err != nil {
		return domain.NextDecision{}, err
	}
	return domain.Next(s.contract, s.thread, now(h.read.clock)), nil
}
