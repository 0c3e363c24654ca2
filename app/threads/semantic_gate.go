package threads

// The semantic gate of RecordStep: a step whose contract asks semantic
// questions ("must satisfy question") is judged by the classifier before it
// is appended, outside the thread's row lock (a classifier call takes
// seconds; the lock is held only for the write).

import (
	"context"

	"github.com/threadengine/engine/app/semantic"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// semanticGate asks the classifier about a submission's semantic rules.
type semanticGate struct {
	classifier ports.Classifier // nil: none configured, such steps are refused
	threads    ports.Grants     // a lock-free read of the thread and its step states
	clock      ports.Clock
}

// judge refuses a submission whose semantic rules are not satisfied
// (content_rule_failed, rule "semantic") or cannot be judged
// (classifier_unavailable: no classifier, or it failed), as the reference
// engine does, fail closed; nil otherwise. Only a submission RecordStep
// would judge is asked about: by a writer of an open thread, not a
// duplicate of a recorded success, with its content rules passing
// (domain.JudgeContent: RecordStep refuses the others with their own
// errors, and nobody may make the engine call the classifier without being
// allowed to write). A success missing a semantic field is refused without
// asking.
func (g semanticGate) judge(ctx context.Context, c *domain.Contract, who domain.Actor, in RecordStepInput, status domain.StepStatus) error {
	if c == nil {
		return nil
	}
	st, ok := c.Step(in.StepName)
	if !ok || len(st.SemanticRules) == 0 {
		return nil
	}
	if g.threads == nil { // built without the module: cannot judge, so refuse
		return domain.ErrNoClassifier(in.StepName)
	}
	v, err := g.threads.ReadGrants(ctx, in.ThreadID)
	if err != nil {
		return err
	}
	th := v.Thread
	if _, err := th.Authorize(who, domain.ActRecordStep, now(g.clock)); err != nil || th.Status.Closed() {
		return nil
	}
	for _, s := range v.States {
		if s.StepName == in.StepName && s.IdempotencyKey == in.IdempotencyKey && domain.StepSucceeded(s.Status) {
			return nil // a duplicate: answered as one
		}
	}
	snapshots := domain.NewDecisionThread(th, *c, nil, ports.Recorded(v.States), stateContexts(v.States), nil).Snapshots
	if domain.JudgeContent(st, status, in.Context, snapshots) != nil {
		return nil // RecordStep refuses it for its content rules
	}
	questions, violations := domain.SemanticQuestions(st, status, in.Context)
	if len(violations) > 0 {
		return domain.ContentResult{Violations: violations}.Err(in.StepName)
	}
	violations, err = semantic.Judge(ctx, g.classifier, in.StepName, questions, snapshots)
	if err != nil {
		return err
	}
	return domain.ContentResult{Violations: violations}.Err(in.StepName)
}

// stateContexts are the latest contexts of states, in their order.
func stateContexts(states []ports.StepState) []map[string]string {
	out := make([]map[string]string, len(states))
	for i, s := range states {
		out[i] = s.LatestContext
	}
	return out
}

// withSemanticGate gives h the module's classifier (Options.Classifier).
func (m *Module) withSemanticGate(h RecordStepHandler) RecordStepHandler {
	h.semantic = semanticGate{classifier: m.opts.Classifier, threads: m.store, clock: m.clock}
	return h
}
