package domain

import (
	"fmt"
	"sort"
	"strings"
)

// MaxSemanticValueBytes bounds a value put to the classifier.
const MaxSemanticValueBytes = 4096

// ContentViolation is one way a submitted context breaks its step's rules.
// Rule is the content operator broken ("gt", "one_of", …), or "required"
// for a missing field, or "semantic".
type ContentViolation struct {
	Field   string `json:"field"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// ContentCheck is a step submission to judge by CheckStepContent.
type ContentCheck struct {
	// Status is the reported status. Only a success must carry every
	// required field; other statuses (a failed attempt produced no
	// outputs) are judged on the fields they do carry.
	Status StepStatus
	// Context is the submitted context.
	Context map[string]string
	// Snapshots holds, for each step of ContractStep.ReferencedSteps, the
	// context of its latest validated success in the same thread (no older
	// one is consulted); a step missing from the map has not succeeded.
	Snapshots map[string]map[string]string
}

// SemanticQuestion is a semantic rule to put to the classifier, with the
// submitted value.
type SemanticQuestion struct {
	Rule  SemanticRule
	Value string
}

// ContentResult is the verdict on a submission. It is accepted when
// Violations is empty (and the caller's classifier, if any, answers every
// Semantic question with at least its rule's Threshold).
type ContentResult struct {
	Violations []ContentViolation
	// Registered are the submitted fields that are contract facts: the
	// declared ones when the step declares context, else all of them.
	Registered map[string]string
	// Unregistered are the other submitted fields (the reference engine
	// keeps them as event metadata "unregistered_context"); never judged.
	Unregistered map[string]string
	// Semantic are the questions left for a classifier, in rule order
	// (empty when there are violations already).
	Semantic []SemanticQuestion
}

// OK reports whether no deterministic rule was broken.
func (r ContentResult) OK() bool { return len(r.Violations) == 0 }

// Err is nil when r is OK, else a content_rule_failed error (422) whose
// message is the first violation, as the reference engine words it
// ("Step validation failed: content field \"amount\" violates gt rule: …"),
// with every violation in Details["violations"].
func (r ContentResult) Err(stepName string) error {
	if r.OK() {
		return nil
	}
	first := r.Violations[0]
	return E(KindUnprocessable, CodeContentRuleFailed, "Step validation failed: %s", first.Message).
		WithField("context."+first.Field).WithDetail("step", stepName).WithDetail("violations", r.Violations)
}

// ProjectContext splits a submitted context into the step's registered
// fields and the rest. A step that declares no context keeps every field.
func ProjectContext(step ContractStep, ctx map[string]string) (registered, unregistered map[string]string) {
	registered = map[string]string{}
	if !step.HasRegisteredContext() {
		for k, v := range ctx {
			registered[k] = v
		}
		return registered, nil
	}
	for k, v := range ctx {
		if contains(step.Required, k) || contains(step.Optional, k) {
			registered[k] = v
		} else {
			if unregistered == nil {
				unregistered = map[string]string{}
			}
			unregistered[k] = v
		}
	}
	return registered, unregistered
}

// CheckStepContent judges a submission against step's content rules, then
// its required fields, then the pure part of its semantic rules (the field
// is present and at most 4096 bytes), on the registered context only. All
// rules are conjunctive; every violation is listed, in that order, a
// missing field once.
func CheckStepContent(step ContractStep, in ContentCheck) ContentResult {
	res := ContentResult{}
	res.Registered, res.Unregistered = ProjectContext(step, in.Context)
	ctx := res.Registered
	full := in.Status == StepStatusSuccess
	missing := map[string]bool{}
	add := func(field, rule, msg string, args ...any) {
		res.Violations = append(res.Violations, ContentViolation{Field: field, Rule: rule, Message: fmt.Sprintf(msg, args...)})
	}

	for _, r := range step.ContentRules {
		v, ok := ctx[r.Field]
		if !ok {
			if full && !missing[r.Field] {
				missing[r.Field] = true
				add(r.Field, "required", "required content field %q is missing", r.Field)
			}
			continue
		}
		if msg := checkRule(r, v, in.Snapshots); msg != "" {
			add(r.Field, string(r.Operator), "%s", msg)
		}
	}
	if full {
		for _, f := range step.Required {
			if _, ok := ctx[f]; !ok && !missing[f] {
				missing[f] = true
				add(f, "required", "required context field %q is missing", f)
			}
		}
	}
	for _, r := range step.SemanticRules {
		v, ok := ctx[r.Field]
		if !ok && !full {
			continue
		}
		if !ok || len(v) > MaxSemanticValueBytes {
			if !missing[r.Field] {
				add(r.Field, "semantic", "semantic field %q is missing or too long", r.Field)
			}
			continue
		}
		res.Semantic = append(res.Semantic, SemanticQuestion{Rule: r, Value: v})
	}
	if len(res.Violations) > 0 {
		res.Semantic = nil
	}
	return res
}

// checkRule returns why v breaks r, or "".
func checkRule(r ContentRule, v string, snapshots map[string]map[string]string) string {
	valid := false
	switch r.Operator {
	case OpNonEmpty:
		valid = strings.TrimSpace(v) != ""
	case OpBoolean:
		valid = v == "true" || v == "false"
	case OpNumber:
		_, err := ParseContentNumber(v)
		valid = err == nil
	case OpGT, OpGTE, OpLT, OpLTE:
		n, err := ParseContentNumber(v)
		bound, berr := ParseContentNumber(r.Value)
		if err == nil && berr == nil {
			c := n.Cmp(bound)
			switch r.Operator {
			case OpGT:
				valid = c > 0
			case OpGTE:
				valid = c >= 0
			case OpLT:
				valid = c < 0
			case OpLTE:
				valid = c <= 0
			}
		}
	case OpOneOf:
		valid = contains(r.Values, v)
	case OpEquals:
		want := r.Value
		if ref := r.Reference; ref != nil {
			snap, ok := snapshots[ref.Step]
			if !ok {
				return fmt.Sprintf("cannot resolve step reference %s.%s: step %q has not succeeded in this thread", ref.Step, ref.Field, ref.Step)
			}
			if want, ok = snap[ref.Field]; !ok {
				return fmt.Sprintf("referenced field %s.%s is missing from the latest successful step", ref.Step, ref.Field)
			}
		}
		valid = v == want
	case OpMatches:
		re, err := CompileContentPattern(r.Value)
		if err != nil {
			return fmt.Sprintf("%s regex: %v", r.Field, err)
		}
		valid = re.MatchString(v)
	default:
		return fmt.Sprintf("unsupported content operator %q", r.Operator)
	}
	if valid {
		return ""
	}
	return fmt.Sprintf("content field %q violates %s rule: %s", r.Field, r.Operator, r.Describe())
}

// ContentConflicts lists the fields of rules that no value can satisfy
// together (equals "a" and equals "b"; one_of lists with nothing in
// common; a number and a boolean; bounds that exclude every number), in
// field order. It is conservative: references and regex intersections are
// left to run time.
func ContentConflicts(rules []ContentRule) []string {
	byField := map[string][]ContentRule{}
	for _, r := range rules {
		if r.Reference == nil {
			byField[r.Field] = append(byField[r.Field], r)
		}
	}
	fields := make([]string, 0, len(byField))
	for f := range byField {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	var out []string
	for _, f := range fields {
		if msg := fieldConflict(f, byField[f]); msg != "" {
			out = append(out, msg)
		}
	}
	return out
}

func fieldConflict(field string, rules []ContentRule) string {
	satisfied := func(v string) bool {
		for _, r := range rules {
			if checkRule(r, v, nil) != "" {
				return false
			}
		}
		return true
	}
	var candidates []string
	finite, hasNumber, hasBoolean := false, false, false
	var lower, upper ContentRule
	var hasLower, hasUpper bool
	for _, r := range rules {
		switch r.Operator {
		case OpEquals:
			if !finite || contains(candidates, r.Value) {
				candidates = []string{r.Value}
			} else {
				candidates = nil
			}
			finite = true
		case OpOneOf:
			if !finite {
				candidates = append([]string(nil), r.Values...)
			} else {
				var keep []string
				for _, c := range candidates {
					if contains(r.Values, c) {
						keep = append(keep, c)
					}
				}
				candidates = keep
			}
			finite = true
		case OpNumber:
			hasNumber = true
		case OpBoolean:
			hasBoolean = true
		case OpGT, OpGTE:
			hasNumber = true
			if tighter(r, lower, hasLower, 1) {
				lower, hasLower = r, true
			}
		case OpLT, OpLTE:
			hasNumber = true
			if tighter(r, upper, hasUpper, -1) {
				upper, hasUpper = r, true
			}
		}
	}
	switch {
	case finite:
		for _, c := range candidates {
			if satisfied(c) {
				return ""
			}
		}
		return fmt.Sprintf("content field %q has no value satisfying all literal rules", field)
	case hasNumber && hasBoolean:
		return fmt.Sprintf("content field %q cannot be both a number and a boolean", field)
	case hasBoolean:
		if !satisfied("true") && !satisfied("false") {
			return fmt.Sprintf("content field %q has no boolean value satisfying all rules", field)
		}
	case hasLower && hasUpper:
		lo, err1 := ParseContentNumber(lower.Value)
		hi, err2 := ParseContentNumber(upper.Value)
		if err1 == nil && err2 == nil {
			c := lo.Cmp(hi)
			if c > 0 || c == 0 && (lower.Operator == OpGT || upper.Operator == OpLT) {
				return fmt.Sprintf("content field %q has incompatible numeric bounds", field)
			}
		}
	}
	return ""
}

// tighter reports whether bound r is stricter than cur in direction dir
// (1: a lower bound, -1: an upper bound).
func tighter(r, cur ContentRule, hasCur bool, dir int) bool {
	b, err := ParseContentNumber(r.Value)
	if err != nil {
		return false
	}
	if !hasCur {
		return true
	}
	c, _ := ParseContentNumber(cur.Value)
	cmp := b.Cmp(c) * dir
	strict := r.Operator == OpGT || r.Operator == OpLT
	return cmp > 0 || cmp == 0 && strict
}
