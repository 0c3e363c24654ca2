package gherkin

import (
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/threadengine/engine/domain"
)

// quoted matches one double-quoted value with Go escapes; unquote checks
// the escapes themselves.
const quoted = `("(?:[^"\\]|\\.)*")`

// Every sentence of the language. Keywords are case-sensitive and single
// spaces matter; lines are trimmed before matching.
var (
	reWhen        = regexp.MustCompile(`^When step ` + quoted + ` is submitted$`)
	reOwner       = regexp.MustCompile(`^owner must be ` + quoted + `$`)
	reStepDesc    = regexp.MustCompile(`^step description is ` + quoted + `$`)
	reStepType    = regexp.MustCompile(`^step type is ` + quoted + `$`)
	reFreshDep    = regexp.MustCompile(`^step ` + quoted + ` must succeed before each invocation$`)
	reDep         = regexp.MustCompile(`^step ` + quoted + ` must have succeeded$`)
	rePresence    = regexp.MustCompile(`^content ` + quoted + ` (must be present|is optional)$`)
	reTimeout     = regexp.MustCompile(`^this step must finish within ` + quoted + `$`)
	reNext        = regexp.MustCompile(`^next step must be one of (.+)$`)
	reNextTimeout = regexp.MustCompile(`^the next step must start within ` + quoted + `$`)
	reRetry       = regexp.MustCompile(`^this step may be retried at most ([0-9]+) times$`)
	reThreadDur   = regexp.MustCompile(`^the thread must finish within ` + quoted + `$`)
	reSeverity    = regexp.MustCompile(`^multiple terminal severity is ` + quoted + `$`)
	reContentType = regexp.MustCompile(`^content ` + quoted + ` must (not be empty|be a number|be a boolean)$`)
	reContentCmp  = regexp.MustCompile(`^content ` + quoted + ` must be a number (greater than or equal to|less than or equal to|greater than|less than) (\S+)$`)
	reContentEnum = regexp.MustCompile(`^content ` + quoted + ` must be one of (.+)$`)
	reContentEq   = regexp.MustCompile(`^content ` + quoted + ` must equal ` + quoted + `$`)
	reContentRef  = regexp.MustCompile(`^content ` + quoted + ` must equal ([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)$`)
	reContentRe   = regexp.MustCompile(`^content ` + quoted + ` must match regex ` + quoted + `$`)
	reSemQuestion = regexp.MustCompile(`^content ` + quoted + ` must satisfy question ` + quoted + `$`)
	reSemContext  = regexp.MustCompile(`^semantic context for content ` + quoted + ` is (.+)$`)
	reSemConf     = regexp.MustCompile(`^semantic confidence for content ` + quoted + ` is (\S+)$`)
	reParallel    = regexp.MustCompile(`^parallel steps are (.+)$`)
	reGroupDur    = regexp.MustCompile(`^combined duration must be within ` + quoted + `$`)
	reGroupHeader = regexp.MustCompile(`^Group: ` + quoted + `$`)
	reStepHeader  = regexp.MustCompile(`^Step: ` + quoted + `$`)
	reDefDesc     = regexp.MustCompile(`^Description: ` + quoted + `$`)
	reDefContext  = regexp.MustCompile(`^(Required|Optional) context: ` + quoted + `(?: means ` + quoted + `)?$`)
	reLegacyDesc  = regexp.MustCompile(`^description is ` + quoted + `$`)
	reLegacyCtx   = regexp.MustCompile(`^(required|optional) context ` + quoted + `(?: means ` + quoted + `)?$`)
	reQuotedItem  = regexp.MustCompile(`^` + quoted)
	reInclude     = regexp.MustCompile(`^Include: ([A-Za-z_][A-Za-z0-9_]*):([1-9][0-9]*)$`)
	reDuration    = regexp.MustCompile(`^(\d+(?:\.\d+)?)(ms|us|s|m|h|d)$`)
	reFeatureName = regexp.MustCompile(`^[a-zA-Z0-9_]+$`)
)

// unquote reads a quoted value: Go escapes (\" \\ \t \u00e9 …), and the
// result must hold non-space text on one line without NUL.
func unquote(q string) (string, error) {
	s, err := strconv.Unquote(q)
	if err != nil {
		return "", fmt.Errorf("invalid quoted value: %w", err)
	}
	if strings.TrimSpace(s) == "" || strings.ContainsAny(s, "\r\n\x00") {
		return "", fmt.Errorf("quoted values must be nonempty single-line strings")
	}
	return s, nil
}

// maxListItems bounds a quoted list (one of, next step, parallel steps).
const maxListItems = 1024

// quotedList reads `"a", "b"`: one or more quoted items, commas between
// them, nothing after the last, no repeats.
func quotedList(s string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for {
		s = strings.TrimSpace(s)
		m := reQuotedItem.FindString(s)
		if m == "" {
			return nil, fmt.Errorf("expected a comma-separated list of quoted step names")
		}
		item, err := unquote(m)
		if err != nil {
			return nil, err
		}
		if seen[item] {
			return nil, fmt.Errorf("duplicate name in list: %s", item)
		}
		seen[item] = true
		if len(out) == maxListItems {
			return nil, fmt.Errorf("a list may have at most %d items", maxListItems)
		}
		out = append(out, item)
		s = strings.TrimSpace(s[len(m):])
		if s == "" {
			return out, nil
		}
		if s[0] != ',' {
			return nil, fmt.Errorf("expected comma between quoted names")
		}
		s = s[1:]
	}
}

// MaxDuration bounds every duration a contract states.
const MaxDuration = 3650 * 24 * time.Hour

var durationUnits = map[string]int64{
	"us": int64(time.Microsecond), "ms": int64(time.Millisecond), "s": int64(time.Second),
	"m": int64(time.Minute), "h": int64(time.Hour), "d": int64(24 * time.Hour),
}

// errDurationFormat is the reference engine's message for a malformed
// duration.
const errDurationFormat = "Invalid duration format. Use: s, ms, us, m, h, or d (e.g., '2s', '3d')"

// ParseDuration reads a contract duration: a decimal number and one of
// us, ms, s, m, h or d ("30s", "1.5h", "3d"). Days are 24 hours and are
// enforced like any other unit. It must be positive and at most 3650d.
func ParseDuration(s string) (time.Duration, error) {
	m := reDuration.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%s", errDurationFormat)
	}
	amount, ok := new(big.Rat).SetString(m[1])
	if !ok || len(m[1]) > 32 {
		return 0, fmt.Errorf("%s", errDurationFormat)
	}
	ns := new(big.Rat).Mul(amount, new(big.Rat).SetInt64(durationUnits[m[2]]))
	if ns.Sign() <= 0 {
		return 0, fmt.Errorf("duration %q must be greater than zero", s)
	}
	if ns.Cmp(new(big.Rat).SetInt64(int64(MaxDuration))) > 0 {
		return 0, fmt.Errorf("duration %q is longer than the limit of 3650d", s)
	}
	n := new(big.Int).Quo(ns.Num(), ns.Denom()) // whole nanoseconds, rounded down
	if n.Sign() == 0 {
		return 0, fmt.Errorf("duration %q must be at least 1ns", s)
	}
	return time.Duration(n.Int64()), nil
}

// severities maps the Background's terminal severities to the engine's:
// "error" is the reference engine's word for a violation that fails the
// thread, which is the engine's critical.
var severities = map[string]domain.Severity{
	"minor": domain.SeverityMinor, "warning": domain.SeverityWarning,
	"major": domain.SeverityMajor, "error": domain.SeverityCritical,
}

// contentClause reads a content rule sentence (clause already known to
// match one of the content patterns) and checks its shape.
func contentClause(clause string) (domain.ContentRule, error) {
	var r domain.ContentRule
	var field string
	switch {
	case reContentRe.MatchString(clause):
		m := reContentRe.FindStringSubmatch(clause)
		field, r.Operator = m[1], domain.OpMatches
		v, err := unquote(m[2])
		if err != nil {
			return r, err
		}
		r.Value = v
	case reContentType.MatchString(clause):
		m := reContentType.FindStringSubmatch(clause)
		field = m[1]
		r.Operator = map[string]domain.ContentOperator{"not be empty": domain.OpNonEmpty, "be a number": domain.OpNumber,
			"be a boolean": domain.OpBoolean}[m[2]]
	case reContentCmp.MatchString(clause):
		m := reContentCmp.FindStringSubmatch(clause)
		field, r.Value = m[1], m[3]
		r.Operator = map[string]domain.ContentOperator{"greater than": domain.OpGT, "greater than or equal to": domain.OpGTE,
			"less than": domain.OpLT, "less than or equal to": domain.OpLTE}[m[2]]
	case reContentEnum.MatchString(clause):
		m := reContentEnum.FindStringSubmatch(clause)
		field, r.Operator = m[1], domain.OpOneOf
		vs, err := quotedList(m[2])
		if err != nil {
			return r, err
		}
		r.Values = vs
	case reContentRef.MatchString(clause):
		m := reContentRef.FindStringSubmatch(clause)
		field, r.Operator = m[1], domain.OpEquals
		r.Reference = &domain.StepFieldRef{Step: m[2], Field: m[3]}
	case reContentEq.MatchString(clause):
		m := reContentEq.FindStringSubmatch(clause)
		field, r.Operator = m[1], domain.OpEquals
		v, err := unquote(m[2])
		if err != nil {
			return r, err
		}
		r.Value = v
	}
	f, err := unquote(field)
	if err != nil {
		return r, err
	}
	r.Field = f
	return r, domain.ValidateContentRule(r)
}

// isContentClause reports whether clause is one of the content rule
// sentences (presence and semantic sentences are not).
func isContentClause(clause string) bool {
	return reContentType.MatchString(clause) || reContentCmp.MatchString(clause) || reContentEnum.MatchString(clause) ||
		reContentEq.MatchString(clause) || reContentRef.MatchString(clause) || reContentRe.MatchString(clause)
}
