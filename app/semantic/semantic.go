// Package semantic puts contract questions to the classifier port: the
// semantic rules of a submitted step ("must satisfy question"), the goal of
// a can or should query, and should's advice. It is shared by the step
// submission path and the decision queries (app/threads), so a question is
// asked, bounded and judged one way everywhere; the pure parts (facts,
// thresholds, wording) are domain's.
package semantic

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// NoAction is the label a goal that names no action is answered with.
const NoAction = "none"

// Judge puts each semantic question of a submission of step to cl, in
// rule order, and returns the rules the content did not satisfy (rule
// "semantic"; empty: every question answered yes with enough probability).
// validated holds the latest validated success context of the thread's
// steps (at least those the rules name as semantic context). Without a
// classifier, or when it fails, times out or answers neither yes nor no,
// the submission is refused with classifier_unavailable (fail closed): a
// rule nobody could judge is never taken as satisfied.
func Judge(ctx context.Context, cl ports.Classifier, step string, qs []domain.SemanticQuestion,
	validated map[string]map[string]string) ([]domain.ContentViolation, error) {
	if len(qs) == 0 {
		return nil, nil
	}
	if cl == nil {
		return nil, domain.ErrNoClassifier(step)
	}
	var out []domain.ContentViolation
	for _, q := range qs {
		facts, v := domain.SemanticState(q, validated)
		if v != nil {
			out = append(out, *v)
			continue
		}
		a, err := cl.Classify(ctx, ports.ClassifyRequest{
			Task: fmt.Sprintf("Answer yes if the candidate field %q satisfies this question, else no. Question: %s",
				q.Rule.Field, q.Rule.Question),
			Labels: []string{domain.SemanticYes, domain.SemanticNo},
			State:  facts,
		})
		if err != nil {
			return nil, domain.ErrClassifierFailed(step, causeOf(err))
		}
		answered, v := domain.SemanticVerdict(q, a.Label, a.Probability)
		if !answered {
			return nil, domain.ErrClassifierFailed(step, fmt.Sprintf("answer %q is neither yes nor no", a.Label))
		}
		if v != nil {
			out = append(out, *v)
		}
	}
	return out, nil
}

// MatchAction asks cl which of actions goal asks for. It returns the
// action, or "" with the reason no single action could be chosen (no
// classifier, an error, "none", an answer under
// domain.ClassifierMinAgreement).
func MatchAction(ctx context.Context, cl ports.Classifier, goal string, actions []string) (action, reason string) {
	if cl == nil {
		return "", "classifier is not configured; give an action, or a goal that is exactly an action name"
	}
	labels := append(append([]string(nil), actions...), NoAction)
	a, err := cl.Classify(ctx, ports.ClassifyRequest{
		Task: "Which contract action does this goal ask to perform? Answer " + NoAction +
			" if none of them does. Goal: " + goal,
		Labels: labels,
		State:  map[string]any{"goal": goal, "actions": actions},
	})
	switch {
	case err != nil:
		return "", "classifier unavailable: " + causeOf(err)
	case a.Label == NoAction || !contains(actions, a.Label):
		return "", "goal does not match a contract action"
	case a.Probability < domain.ClassifierMinAgreement:
		return "", fmt.Sprintf("goal matched %q with probability %.2f, below %.2f", a.Label, a.Probability, domain.ClassifierMinAgreement)
	}
	return a.Label, ""
}

// Advise asks cl whether the thread should take action now, given facts
// (its recent validated content and refs). The answer is yes, no or
// uncertain with its probability; err when the classifier failed.
func Advise(ctx context.Context, cl ports.Classifier, action string, facts any) (ports.ClassifyAnswer, error) {
	return cl.Classify(ctx, ports.ClassifyRequest{
		Task: "Given this thread's validated step content and references, should it perform the action " +
			strconv.Quote(action) + " now? Answer yes, no or uncertain.",
		Labels: []string{domain.RecommendYes, domain.RecommendNo, domain.RecommendUncertain},
		State:  facts,
	})
}

// causeOf is an error's public message: the adapter's coded errors say
// what went wrong without leaking the endpoint's credentials.
func causeOf(err error) string {
	var e *domain.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return strings.TrimSpace(err.Error())
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
