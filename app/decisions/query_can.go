package decisions

// The Can query: may the caller record this step now? (GraphQL can, MCP
// can_step, sdk/js thread.can.) Read-only: never a grant.

import (
	"context"

	"github.com/threadengine/engine/app/semantic"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// CanInput names the thread and exactly one of Action (a step of its
// contract) and Goal (words the classifier matches to one); Context, when
// not nil, is a candidate context judged as the step's would be.
type CanInput struct {
	ThreadID string
	Action   string
	Goal     string
	Context  map[string]string
}

// CanHandler answers can; one of the thread Queries (threads.Application).
type CanHandler struct {
	read       decisionReader
	classifier ports.Classifier // nil: goals need an exact action name; semantic rules deny
}

// NewCanHandler builds Can.
func NewCanHandler(grants ports.Grants, contracts ThreadContracts, classifier ports.Classifier, clock ports.Clock) CanHandler {
	return CanHandler{read: decisionReader{grants: grants, contracts: contracts, clock: clock}, classifier: classifier}
}

// Handle judges the step by domain.Can on one snapshot of the thread and,
// for an allowed step with a candidate context, puts its semantic rules to
// the classifier (no classifier or a failure denies, with the reason). A
// goal no action matches is an uncertain decision, not an error; an
// unknown action, both or neither of action and goal, a bad context, a
// thread the caller cannot write or one without contract are errors.
func (h CanHandler) Handle(ctx context.Context, in CanInput) (domain.CanDecision, error) {
	s, err := h.read.load(ctx, in.ThreadID)
	if err != nil {
		return domain.CanDecision{}, err
	}
	step, matchedBy, uncertain, err := resolveStep(ctx, h.classifier, s.contract, in.Action, in.Goal)
	if err != nil {
		return domain.CanDecision{}, err
	}
	if uncertain != nil {
		return *uncertain, nil
	}
	d, err := domain.Can(s.contract, s.thread, step, in.Context, now(h.read.clock))
	if err != nil {
		return domain.CanDecision{}, err
	}
	d.MatchedBy = matchedBy
	if d.Status != domain.DecisionAllowed || in.Context == nil {
		return d, nil
	}
	st, _ := s.contract.Step(step)
	res := domain.CheckStepContent(st, domain.ContentCheck{Status: domain.StepStatusSuccess, Context: in.Context, Snapshots: s.thread.Snapshots})
	if len(res.Semantic) == 0 {
		return d, nil
	}
	violations, err := semantic.Judge(ctx, h.classifier, step, res.Semantic, s.thread.Snapshots)
	switch {
	case err != nil:
		d.Allowed, d.Status, d.Reason = false, domain.DecisionDenied, domain.Public(err).Message
	case len(violations) > 0:
		d.Allowed, d.Status, d.Reason, d.Violations = false, domain.DecisionDenied, violations[0].Message, violations
	}
	return d, nil
}
