package decisions

// The Should query: advice on an action (GraphQL should, MCP should_step,
// sdk/js thread.should). Never a permission.

import (
	"context"

	"github.com/threadengine/engine/app/semantic"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// ShouldInput names the thread and exactly one of Action and Goal.
type ShouldInput struct {
	ThreadID string
	Action   string
	Goal     string
}

// ShouldHandler answers should; one of the thread Queries (threads.Application).
type ShouldHandler struct {
	read       decisionReader
	refs       ports.ThreadDetailsReader
	classifier ports.Classifier
}

// NewShouldHandler builds Should.
func NewShouldHandler(grants ports.Grants, refs ports.ThreadDetailsReader, contracts ThreadContracts, classifier ports.Classifier,
	clock ports.Clock) ShouldHandler {
	return ShouldHandler{read: decisionReader{grants: grants, contracts: contracts, clock: clock}, refs: refs, classifier: classifier}
}

// Handle runs can without context (domain.Should): a step can denies is
// "no" with its reason; an eligible one is put to the classifier with the
// thread's recent validated content and refs (domain.ShouldFacts), or is
// "unavailable" without one or when it fails.
func (h ShouldHandler) Handle(ctx context.Context, in ShouldInput) (domain.ShouldDecision, error) {
	s, err := h.read.load(ctx, in.ThreadID)
	if err != nil {
		return domain.ShouldDecision{}, err
	}
	step, _, uncertain, err := resolveStep(ctx, h.classifier, s.contract, in.Action, in.Goal)
	if err != nil {
		return domain.ShouldDecision{}, err
	}
	if uncertain != nil {
		return domain.ShouldDecision{Recommendation: domain.RecommendNo, Reason: uncertain.Reason}, nil
	}
	d, err := domain.Should(s.contract, s.thread, step, now(h.read.clock))
	if err != nil || !d.Eligible || h.classifier == nil {
		return d, err
	}
	refs, err := h.refs.ListRefs(ctx, in.ThreadID)
	if err != nil {
		d.Reason = domain.ReasonNoSnapshot
		return d, nil
	}
	a, err := semantic.Advise(ctx, h.classifier, step, domain.ShouldFacts(s.thread, refs))
	if err != nil {
		d.Reason = domain.ReasonClassifierFailed
		return d, nil
	}
	return d.Recommend(a.Label, a.Probability), nil
}
