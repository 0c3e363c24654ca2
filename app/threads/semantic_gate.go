package threads

// The semantic gate of RecordStep: a step whose contract asks semantic
// questions ("must satisfy question") is judged by the classifier before it
// is appended, outside the thread's row lock (a classifier call takes
// seconds; the lock is held only for the write). The verdict remembers what
// it was taken against (its basis: the latest validated success of each
// context step the rules name); under the lock the append checks that the
// basis still holds and, when a context step succeeded again meanwhile,
// the handler judges again (at most maxSemanticJudgements times).

import (
	"context"
	"errors"
	"maps"

	"github.com/threadengine/engine/app/semantic"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// maxSemanticJudgements bounds how often one submission is put to the
// classifier when the thread keeps changing under its verdict; past it the
// submission is refused with a retryable error (errSemanticBasisMoved).
const maxSemanticJudgements = 3

// semanticGate asks the classifier about a submission's semantic rules.
type semanticGate struct {
	classifier ports.Classifier // nil: none configured, such steps are refused
	threads    ports.Grants     // a lock-free read of the thread and its step states
	clock      ports.Clock
}

// semanticVerdict is what judge concluded: whether the submission's
// semantic rules were judged and satisfied (judged), and against which
// validated contexts of their context steps (basis).
type semanticVerdict struct {
	judged bool
	basis  map[string]map[string]string
}

// holds reports whether the verdict may admit an append of a step whose
// contract step is st, judged under the row lock on c and states: a step
// without semantic rules needs none; one with them needs a verdict that
// judged the rules against the very contexts the locked thread has. A
// verdict that did not judge (judge skipped a submission it expected
// RecordStep to refuse, e.g. a writer that was not yet a party) does not
// hold once RecordStep would accept it.
func (v semanticVerdict) holds(c *domain.Contract, st domain.ContractStep, th domain.Thread, states []ports.StepState) bool {
	if c == nil || len(st.SemanticRules) == 0 {
		return true
	}
	return v.judged && basisEqual(v.basis, semanticBasis(c, st, th, states))
}

// errSemanticStale is returned by the append closure when the verdict no
// longer holds; the handler judges again.
var errSemanticStale = errors.New("semantic verdict taken against an older thread")

// errSemanticBasisMoved refuses a submission whose semantic verdict went
// stale maxSemanticJudgements times in a row (context steps of its rules
// kept succeeding while it was judged): retrying later may work.
func errSemanticBasisMoved(step string) error {
	return domain.E(domain.KindUnavailable, domain.CodeUnavailable,
		"Step validation failed: the thread changed while its semantic rules were judged; retry the step").
		WithDetail("step", step)
}

// judge refuses a submission whose semantic rules are not satisfied
// (content_rule_failed, rule "semantic") or cannot be judged
// (classifier_unavailable: no classifier, or it failed), as the reference
// engine does, fail closed; otherwise it returns the verdict the append
// must check under the row lock (semanticVerdict.holds). Only a submission
// RecordStep would judge is asked about: by a writer of an open thread,
// not a duplicate of a recorded success, with its content rules passing
// (domain.JudgeContent: RecordStep refuses the others with their own
// errors, and nobody may make the engine call the classifier without being
// allowed to write). A success missing a semantic field is refused without
// asking. A refusal is judged against the thread as read; an acceptance is
// checked again under the lock.
func (g semanticGate) judge(ctx context.Context, c *domain.Contract, who domain.Actor, in RecordStepInput, status domain.StepStatus) (semanticVerdict, error) {
	if c == nil {
		return semanticVerdict{}, nil
	}
	st, ok := c.Step(in.StepName)
	if !ok || len(st.SemanticRules) == 0 {
		return semanticVerdict{}, nil
	}
	if g.threads == nil { // built without the module: cannot judge, so refuse
		return semanticVerdict{}, domain.ErrNoClassifier(in.StepName)
	}
	v, err := g.threads.ReadGrants(ctx, in.ThreadID)
	if err != nil {
		return semanticVerdict{}, err
	}
	th := v.Thread
	if _, err := th.Authorize(who, domain.ActRecordStep, now(g.clock)); err != nil || th.Status.Closed() {
		return semanticVerdict{}, nil
	}
	for _, s := range v.States {
		if s.StepName == in.StepName && s.IdempotencyKey == in.IdempotencyKey && domain.StepSucceeded(s.Status) {
			return semanticVerdict{}, nil // a duplicate: answered as one
		}
	}
	snapshots := domain.NewDecisionThread(th, *c, nil, ports.Recorded(v.States), ports.StateContexts(v.States), nil).Snapshots
	if domain.JudgeContent(st, status, in.Context, snapshots) != nil {
		return semanticVerdict{}, nil // RecordStep refuses it for its content rules
	}
	questions, violations := domain.SemanticQuestions(st, status, in.Context)
	if len(violations) > 0 {
		return semanticVerdict{}, domain.ContentResult{Violations: violations}.Err(in.StepName)
	}
	violations, err = semantic.Judge(ctx, g.classifier, in.StepName, questions, snapshots)
	if err != nil {
		return semanticVerdict{}, err
	}
	if err := (domain.ContentResult{Violations: violations}).Err(in.StepName); err != nil {
		return semanticVerdict{}, err
	}
	return semanticVerdict{judged: true, basis: contextBasis(st, snapshots)}, nil
}

// semanticBasis is what st's semantic rules are judged against on a thread
// th with states: the validated (registered) context of the latest success
// of each context step the rules name, as judge reads it.
func semanticBasis(c *domain.Contract, st domain.ContractStep, th domain.Thread, states []ports.StepState) map[string]map[string]string {
	snapshots := domain.NewDecisionThread(th, *c, nil, ports.Recorded(states), ports.StateContexts(states), nil).Snapshots
	return contextBasis(st, snapshots)
}

// contextBasis keeps, of snapshots, the context steps of st's semantic
// rules (a step without a success is absent).
func contextBasis(st domain.ContractStep, snapshots map[string]map[string]string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, r := range st.SemanticRules {
		for _, s := range r.ContextSteps {
			if ctx, ok := snapshots[s]; ok {
				out[s] = ctx
			}
		}
	}
	return out
}

func basisEqual(a, b map[string]map[string]string) bool {
	return maps.EqualFunc(a, b, func(x, y map[string]string) bool { return maps.Equal(x, y) })
}

// withSemanticGate gives h the module's classifier (Options.Classifier).
func (m *Module) withSemanticGate(h RecordStepHandler) RecordStepHandler {
	h.semantic = semanticGate{classifier: m.opts.Classifier, threads: m.store, clock: m.clock}
	return h
}
