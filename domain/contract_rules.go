package domain

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ContentOperator is what a content rule checks about one context value.
type ContentOperator string

// Content operators, as the Threadify engine stores them.
const (
	OpNonEmpty ContentOperator = "nonempty" // not empty after trimming spaces
	OpNumber   ContentOperator = "number"   // a JSON-style number
	OpBoolean  ContentOperator = "boolean"  // exactly "true" or "false"
	OpGT       ContentOperator = "gt"       // a number greater than Value
	OpGTE      ContentOperator = "gte"      // a number greater than or equal to Value
	OpLT       ContentOperator = "lt"       // a number less than Value
	OpLTE      ContentOperator = "lte"      // a number less than or equal to Value
	OpOneOf    ContentOperator = "one_of"   // exactly one of Values (case-sensitive)
	OpEquals   ContentOperator = "equals"   // exactly Value, or the referenced step's field
	OpMatches  ContentOperator = "matches"  // RE2 pattern Value found in the value (unanchored)
)

// StepFieldRef names a field of another step's latest validated success in
// the same thread.
type StepFieldRef struct {
	Step  string `json:"step"`
	Field string `json:"field"`
}

// ContentRule is one check of a submitted context value. A rule has a
// literal operand (Value, Values) or a Reference, never both.
type ContentRule struct {
	Reference *StepFieldRef   `json:"reference,omitempty"`
	Field     string          `json:"field"`
	Operator  ContentOperator `json:"operator"`
	Value     string          `json:"value,omitempty"`
	Values    []string        `json:"values,omitempty"`
}

// SemanticRule is a yes/no question a classifier answers about one field,
// optionally grounded in earlier steps' validated content.
type SemanticRule struct {
	Field        string   `json:"field"`
	Question     string   `json:"question"`
	ContextSteps []string `json:"context_steps,omitempty"`
	// MinProbability is the probability of "yes" needed; 0 means the
	// default, DefaultSemanticMinProbability.
	MinProbability float64 `json:"min_probability,omitempty"`
}

// ContractGroup is a parallel group: steps that run side by side.
type ContractGroup struct {
	Name  string   `json:"name"`
	Steps []string `json:"steps"`
	// AllMustSucceed: every member must succeed ("all parallel steps must
	// succeed"); false means any may.
	AllMustSucceed bool `json:"all_must_succeed,omitempty"`
	// MaxCombinedDuration bounds the members' durations added up; 0 means
	// unbounded.
	MaxCombinedDuration time.Duration `json:"max_combined_duration,omitempty"`
}

// Bounds of content and semantic rules (the reference engine's).
const (
	MaxRegexPatternBytes          = 4096
	MaxContentNumberLen           = 4096
	MaxSemanticContextSteps       = 12
	DefaultSemanticMinProbability = 0.8
	MaxStepDescriptionBytes       = 500
)

// SimpleIdentifierRE is what step references and semantic fields must look
// like.
var SimpleIdentifierRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var jsonNumberRE = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$`)

// ParseContentNumber reads a JSON-style number exactly: no spaces, no
// leading '+', '.5' or '01', no NaN or Infinity, an explicit exponent from
// -308 to 308, finite as a float64. Decimal values compare exactly (12.50
// equals 12.5; 0.1+0.2 rounding never applies).
func ParseContentNumber(s string) (*big.Rat, error) {
	if len(s) > MaxContentNumberLen || !jsonNumberRE.MatchString(s) {
		return nil, fmt.Errorf("expected a JSON-style number")
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp, err := strconv.Atoi(s[i+1:])
		if err != nil || exp < -308 || exp > 308 {
			return nil, fmt.Errorf("numeric exponent must be between -308 and 308")
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("expected a finite number")
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("expected a number")
	}
	return r, nil
}

// ValidateContentRule checks a rule's shape before a contract is accepted;
// the message names the field as the Threadify engine does ("amount bound:
// expected a JSON-style number", "reference regex: invalid pattern: …").
func ValidateContentRule(r ContentRule) error {
	if strings.TrimSpace(r.Field) == "" {
		return fmt.Errorf("content rule field cannot be empty")
	}
	if r.Reference != nil {
		if r.Operator != OpEquals || r.Value != "" || len(r.Values) > 0 {
			return fmt.Errorf("references require equals without a literal operand")
		}
		if !SimpleIdentifierRE.MatchString(r.Reference.Step) || !SimpleIdentifierRE.MatchString(r.Reference.Field) {
			return fmt.Errorf("references require simple step and field identifiers")
		}
	}
	switch r.Operator {
	case OpNonEmpty, OpNumber, OpBoolean:
		if r.Value != "" || len(r.Values) > 0 {
			return fmt.Errorf("%s does not accept operands", r.Operator)
		}
	case OpEquals:
		if len(r.Values) > 0 {
			return fmt.Errorf("equals accepts one value")
		}
	case OpMatches:
		if len(r.Values) > 0 {
			return fmt.Errorf("matches accepts one regex pattern")
		}
		if _, err := CompileContentPattern(r.Value); err != nil {
			return fmt.Errorf("%s regex: %w", r.Field, err)
		}
	case OpOneOf:
		if len(r.Values) == 0 || r.Value != "" {
			return fmt.Errorf("one_of requires a nonempty values list")
		}
	case OpGT, OpGTE, OpLT, OpLTE:
		if _, err := ParseContentNumber(r.Value); err != nil {
			return fmt.Errorf("%s bound: %w", r.Field, err)
		}
		if len(r.Values) > 0 {
			return fmt.Errorf("numeric bounds accept one value")
		}
	default:
		return fmt.Errorf("unsupported content operator %q", r.Operator)
	}
	return nil
}

// ValidateSemanticRule checks a semantic rule's shape.
func ValidateSemanticRule(r SemanticRule) error {
	if !SimpleIdentifierRE.MatchString(r.Field) {
		return fmt.Errorf("semantic rule field must be a simple identifier")
	}
	if len(strings.TrimSpace(r.Question)) < 5 || len(r.Question) > 1000 {
		return fmt.Errorf("semantic rule question must be 5–1000 characters")
	}
	if p := r.MinProbability; math.IsNaN(p) || math.IsInf(p, 0) || p != 0 && (p < 0.5 || p > 1) {
		return fmt.Errorf("semantic rule min_probability must be between 0.5 and 1")
	}
	if len(r.ContextSteps) > MaxSemanticContextSteps {
		return fmt.Errorf("semantic rule has too many context steps")
	}
	for _, s := range r.ContextSteps {
		if !SimpleIdentifierRE.MatchString(s) {
			return fmt.Errorf("semantic context step must be a simple identifier")
		}
	}
	return nil
}

// Threshold is the probability of "yes" the rule needs.
func (r SemanticRule) Threshold() float64 {
	if r.MinProbability == 0 {
		return DefaultSemanticMinProbability
	}
	return r.MinProbability
}

// Describe says what the rule asks for, in the contract's words.
func (r ContentRule) Describe() string {
	switch r.Operator {
	case OpNonEmpty:
		return "must not be empty"
	case OpNumber:
		return "must be a number"
	case OpBoolean:
		return "must be a boolean"
	case OpGT:
		return "must be a number greater than " + r.Value
	case OpGTE:
		return "must be a number greater than or equal to " + r.Value
	case OpLT:
		return "must be a number less than " + r.Value
	case OpLTE:
		return "must be a number less than or equal to " + r.Value
	case OpOneOf:
		return "must be one of " + quoteList(r.Values)
	case OpEquals:
		if r.Reference != nil {
			return "must equal " + r.Reference.Step + "." + r.Reference.Field
		}
		return "must equal " + strconv.Quote(r.Value)
	case OpMatches:
		return "must match regex " + strconv.Quote(r.Value)
	}
	return string(r.Operator)
}

func quoteList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}

// ReferencedSteps lists the steps whose latest validated success a check
// of step reads: content references, then semantic context steps, each once.
// The caller loads exactly these snapshots for CheckStepContent.
func (s ContractStep) ReferencedSteps() []string {
	var out []string
	for _, r := range s.ContentRules {
		if r.Reference != nil && !contains(out, r.Reference.Step) {
			out = append(out, r.Reference.Step)
		}
	}
	for _, r := range s.SemanticRules {
		for _, st := range r.ContextSteps {
			if !contains(out, st) {
				out = append(out, st)
			}
		}
	}
	return out
}

// HasRegisteredContext reports whether the step declares its context (any
// required or optional field): then only declared fields are contract facts.
func (s ContractStep) HasRegisteredContext() bool { return len(s.Required)+len(s.Optional) > 0 }

// Group returns the group called name.
func (c Contract) Group(name string) (ContractGroup, bool) {
	for _, g := range c.Groups {
		if g.Name == name {
			return g, true
		}
	}
	return ContractGroup{}, false
}
