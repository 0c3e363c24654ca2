package domain

import (
	"fmt"
	"sort"
)

// Bounds of the validated content a semantic question is grounded in (the
// reference engine's): per context step at most 32 fields, names of at most
// 128 bytes, values of at most 512.
const (
	MaxSemanticContextFields   = 32
	MaxSemanticContextFieldLen = 128
	MaxSemanticContextValueLen = 512
)

// Semantic answers: a question is put with these labels.
const (
	SemanticYes = "yes"
	SemanticNo  = "no"
)

// SemanticFacts are what a semantic question is put with: the submitted
// field and the latest validated content of the rule's context steps.
type SemanticFacts struct {
	Candidate       map[string]string            `json:"candidate"`
	SuccessfulSteps map[string]map[string]string `json:"successful_steps,omitempty"`
}

// SemanticState builds the facts of question q. validated holds, for each
// context step that has a validated success in the thread, its latest
// success's registered context. A context step without one, or one whose
// content is over the bounds, is a violation (rule "semantic") with the
// reference engine's wording, and nothing is put to the classifier.
func SemanticState(q SemanticQuestion, validated map[string]map[string]string) (SemanticFacts, *ContentViolation) {
	f := SemanticFacts{Candidate: map[string]string{q.Rule.Field: q.Value}}
	steps := append([]string(nil), q.Rule.ContextSteps...)
	sort.Strings(steps)
	for _, s := range steps {
		ctx, ok := validated[s]
		if !ok {
			return SemanticFacts{}, &ContentViolation{Field: q.Rule.Field, Rule: "semantic",
				Message: fmt.Sprintf("validated context for %q is unavailable: the step has no validated success in this thread", s)}
		}
		if len(ctx) > MaxSemanticContextFields {
			return SemanticFacts{}, semanticTooLarge(q, s)
		}
		for k, v := range ctx {
			if len(k) > MaxSemanticContextFieldLen || len(v) > MaxSemanticContextValueLen {
				return SemanticFacts{}, semanticTooLarge(q, s)
			}
		}
		if f.SuccessfulSteps == nil {
			f.SuccessfulSteps = map[string]map[string]string{}
		}
		f.SuccessfulSteps[s] = ctx
	}
	return f, nil
}

func semanticTooLarge(q SemanticQuestion, step string) *ContentViolation {
	return &ContentViolation{Field: q.Rule.Field, Rule: "semantic", Message: fmt.Sprintf("validated context for %q is too large", step)}
}

// SemanticVerdict judges a classifier's answer to q: the probability of
// "yes" (the answer's probability when it chose yes, its complement when it
// chose no) must reach the rule's Threshold; otherwise the violation says
// the field did not satisfy its rule. A label other than yes or no is no
// answer (ok false, nil: the caller reports the classifier as unavailable).
func SemanticVerdict(q SemanticQuestion, label string, probability float64) (answered bool, v *ContentViolation) {
	var yes float64
	switch label {
	case SemanticYes:
		yes = probability
	case SemanticNo:
		yes = 1 - probability
	default:
		return false, nil
	}
	if yes >= q.Rule.Threshold() {
		return true, nil
	}
	return true, &ContentViolation{Field: q.Rule.Field, Rule: "semantic",
		Message: fmt.Sprintf("semantic field %q did not satisfy its contract rule", q.Rule.Field)}
}

// ErrNoClassifier refuses a step with a semantic rule when no classifier is
// configured: fail closed, as the reference engine does.
func ErrNoClassifier(step string) error {
	return E(KindUnavailable, CodeClassifierUnavailable,
		"Step validation failed: semantic classifier is unavailable (no classifier is configured: contracts.classifier.url)").
		WithDetail("step", step)
}

// ErrClassifierFailed refuses a step whose semantic rule the classifier
// could not answer (error, timeout, an answer that is not yes or no).
func ErrClassifierFailed(step string, cause string) error {
	return E(KindUnavailable, CodeClassifierUnavailable, "Step validation failed: semantic classification unavailable: %s", cause).
		WithDetail("step", step)
}

// SemanticQuestions are the semantic rules of a submission of step to put
// to the classifier, in rule order, on its registered context; a field a
// success does not carry, or one over 4096 bytes, is a violation instead
// (`semantic field "<f>" is missing or too long`). Other statuses are asked
// only about the fields they carry.
func SemanticQuestions(step ContractStep, status StepStatus, ctx map[string]string) ([]SemanticQuestion, []ContentViolation) {
	registered, _ := ProjectContext(step, ctx)
	var qs []SemanticQuestion
	var vs []ContentViolation
	for _, r := range step.SemanticRules {
		v, ok := registered[r.Field]
		if !ok && status != StepStatusSuccess {
			continue
		}
		if !ok || len(v) > MaxSemanticValueBytes {
			vs = append(vs, ContentViolation{Field: r.Field, Rule: "semantic", Message: fmt.Sprintf("semantic field %q is missing or too long", r.Field)})
			continue
		}
		qs = append(qs, SemanticQuestion{Rule: r, Value: v})
	}
	return qs, vs
}
