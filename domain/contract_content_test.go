package domain

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestParseContentNumber(t *testing.T) {
	t.Parallel()
	ok := []string{"0", "-5", "12.50", "1e3", "1E+3", "-0.0", "1e-308", "1e308", "123456789012345678901234567890.000000000000000000001"}
	bad := []string{"", " 1", "1 ", "+1", ".5", "01", "1.", "NaN", "Infinity", "0x10", "1e309", "1e-309", "2e308", "1,5", strings.Repeat("1", 4097)}
	for _, s := range ok {
		if _, err := ParseContentNumber(s); err != nil {
			t.Errorf("ParseContentNumber(%q): %v", s, err)
		}
	}
	for _, s := range bad {
		if _, err := ParseContentNumber(s); err == nil {
			t.Errorf("ParseContentNumber(%q) accepted", s)
		}
	}
	if _, err := ParseContentNumber("1e999"); err == nil || err.Error() != "numeric exponent must be between -308 and 308" {
		t.Errorf("exponent: %v", err)
	}
	// Exact decimals: 0.1 + 0.2 style rounding never applies.
	a, _ := ParseContentNumber("100000000000000000.1")
	b, _ := ParseContentNumber("100000000000000000")
	if a.Cmp(b) <= 0 {
		t.Error("decimal comparison rounded")
	}
}

// Each operator, table-driven: value → accepted?
func TestContentOperators(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rule ContentRule
		ok   []string
		bad  []string
	}{
		{ContentRule{Field: "f", Operator: OpNonEmpty}, []string{"x", " x "}, []string{"", "  ", "\t\n"}},
		{ContentRule{Field: "f", Operator: OpNumber}, []string{"0", "-1.5", "2e10"}, []string{"", "abc", "+1", ".5", "NaN", "1e400"}},
		{ContentRule{Field: "f", Operator: OpBoolean}, []string{"true", "false"}, []string{"True", "1", "yes", ""}},
		{ContentRule{Field: "f", Operator: OpGT, Value: "0"}, []string{"0.01", "1e-300", "5"}, []string{"0", "-0.0", "-1", "abc", ""}},
		{ContentRule{Field: "f", Operator: OpGTE, Value: "12.50"}, []string{"12.5", "12.500", "13"}, []string{"12.49", "x"}},
		{ContentRule{Field: "f", Operator: OpLT, Value: "1e3"}, []string{"999.999", "-1e3"}, []string{"1000", "1000.0", "1e3"}},
		{ContentRule{Field: "f", Operator: OpLTE, Value: "-5"}, []string{"-5", "-5.0", "-6"}, []string{"-4.99", "5"}},
		{ContentRule{Field: "f", Operator: OpOneOf, Values: []string{"GBP", "USD", "EUR"}}, []string{"GBP", "EUR"}, []string{"gbp", "JPY", " GBP", ""}},
		{ContentRule{Field: "f", Operator: OpEquals, Value: "card"}, []string{"card"}, []string{"Card", "card ", ""}},
		{ContentRule{Field: "f", Operator: OpMatches, Value: `^TRK-\d{8}$`}, []string{"TRK-12345678"}, []string{"TRK-1234567", "xTRK-12345678", ""}},
		{ContentRule{Field: "f", Operator: OpMatches, Value: `(?i)abc`}, []string{"xxABCxx", "abc"}, []string{"ab"}},
		{ContentRule{Field: "f", Operator: OpMatches, Value: `^$`}, []string{""}, []string{"a"}},
	}
	for _, tt := range tests {
		step := ContractStep{Name: "s", ContentRules: []ContentRule{tt.rule}}
		for _, v := range tt.ok {
			if r := CheckStepContent(step, ContentCheck{Status: StepStatusSuccess, Context: map[string]string{"f": v}}); !r.OK() {
				t.Errorf("%s %q: refused %v", tt.rule.Describe(), v, r.Violations)
			}
		}
		for _, v := range tt.bad {
			r := CheckStepContent(step, ContentCheck{Status: StepStatusSuccess, Context: map[string]string{"f": v}})
			want := fmt.Sprintf("content field \"f\" violates %s rule: %s", tt.rule.Operator, tt.rule.Describe())
			if len(r.Violations) != 1 || r.Violations[0].Message != want || r.Violations[0].Rule != string(tt.rule.Operator) {
				t.Errorf("%s %q: %v", tt.rule.Describe(), v, r.Violations)
			}
		}
	}
}

// The payment example: amount 0 and currency JPY are refused, named by
// field and rule, as one coded error; valid content passes.
func TestCheckStepContentPayment(t *testing.T) {
	t.Parallel()
	charge := ContractStep{Name: "charge", Required: []string{"reference", "amount", "currency"}, Optional: []string{"provider_transaction_id"},
		ContentRules: []ContentRule{{Field: "amount", Operator: OpGT, Value: "0"}, {Field: "currency", Operator: OpOneOf, Values: []string{"GBP", "USD", "EUR"}}}}
	r := CheckStepContent(charge, ContentCheck{Status: StepStatusSuccess, Context: map[string]string{"amount": "0", "currency": "JPY", "reference": "r1", "debug": "x"}})
	want := []ContentViolation{
		{Field: "amount", Rule: "gt", Message: `content field "amount" violates gt rule: must be a number greater than 0`},
		{Field: "currency", Rule: "one_of", Message: `content field "currency" violates one_of rule: must be one of "GBP", "USD", "EUR"`},
	}
	if !reflect.DeepEqual(r.Violations, want) {
		t.Errorf("violations %+v", r.Violations)
	}
	if !reflect.DeepEqual(r.Unregistered, map[string]string{"debug": "x"}) || r.Registered["debug"] != "" {
		t.Errorf("projection %v / %v", r.Registered, r.Unregistered)
	}
	err := r.Err("charge")
	if CodeOf(err) != CodeContentRuleFailed || KindOf(err) != KindUnprocessable || AsError(err).Field != "context.amount" ||
		AsError(err).Message != `Step validation failed: content field "amount" violates gt rule: must be a number greater than 0` {
		t.Errorf("err = %#v", err)
	}
	if !Registered(CodeContentRuleFailed, KindUnprocessable) {
		t.Error("content_rule_failed is not registered")
	}
	if r := CheckStepContent(charge, ContentCheck{Status: StepStatusSuccess, Context: map[string]string{"amount": "12.50", "currency": "GBP", "reference": "r"}}); !r.OK() || r.Err("charge") != nil {
		t.Errorf("valid content refused: %v", r.Violations)
	}
	// Missing fields: a content field once, then other required fields.
	r = CheckStepContent(charge, ContentCheck{Status: StepStatusSuccess, Context: map[string]string{"currency": "GBP"}})
	want = []ContentViolation{
		{Field: "amount", Rule: "required", Message: `required content field "amount" is missing`},
		{Field: "reference", Rule: "required", Message: `required context field "reference" is missing`},
	}
	if !reflect.DeepEqual(r.Violations, want) {
		t.Errorf("missing: %+v", r.Violations)
	}
	// A failed attempt is judged only on the fields it carries.
	if r := CheckStepContent(charge, ContentCheck{Status: StepStatusFailed, Context: map[string]string{}}); !r.OK() {
		t.Errorf("failed attempt without outputs refused: %v", r.Violations)
	}
	if r := CheckStepContent(charge, ContentCheck{Status: StepStatusFailed, Context: map[string]string{"amount": "-1"}}); r.OK() {
		t.Error("failed attempt with a bad amount accepted")
	}
}

// A step that declares no context keeps every field; one that declares
// some judges only those (extra fields are unregistered, never judged).
func TestProjectContext(t *testing.T) {
	t.Parallel()
	reg, unreg := ProjectContext(ContractStep{}, map[string]string{"a": "1"})
	if !reflect.DeepEqual(reg, map[string]string{"a": "1"}) || unreg != nil {
		t.Errorf("undeclared: %v %v", reg, unreg)
	}
	step := ContractStep{Optional: []string{"a"}, ContentRules: []ContentRule{{Field: "b", Operator: OpNonEmpty}}}
	r := CheckStepContent(step, ContentCheck{Status: StepStatusSuccess, Context: map[string]string{"a": "1", "b": ""}})
	if len(r.Violations) != 1 || r.Violations[0].Message != `required content field "b" is missing` {
		t.Errorf("an unregistered field was judged: %v", r.Violations)
	}
}

// equals step.field reads the same thread's latest validated success.
func TestContentReferences(t *testing.T) {
	t.Parallel()
	step := ContractStep{Name: "delivered", Required: []string{"tracking"}, ContentRules: []ContentRule{
		{Field: "tracking", Operator: OpEquals, Reference: &StepFieldRef{Step: "shipped", Field: "tracking"}}}}
	if got := step.ReferencedSteps(); !reflect.DeepEqual(got, []string{"shipped"}) {
		t.Errorf("referenced %v", got)
	}
	tests := []struct {
		snap map[string]map[string]string
		val  string
		want string
	}{
		{map[string]map[string]string{"shipped": {"tracking": "T1"}}, "T1", ""},
		{map[string]map[string]string{"shipped": {"tracking": "1.00"}}, "1", `content field "tracking" violates equals rule: must equal shipped.tracking`},
		{nil, "T1", `cannot resolve step reference shipped.tracking: step "shipped" has not succeeded in this thread`},
		{map[string]map[string]string{"shipped": {}}, "T1", "referenced field shipped.tracking is missing from the latest successful step"},
	}
	for _, tt := range tests {
		r := CheckStepContent(step, ContentCheck{Status: StepStatusSuccess, Context: map[string]string{"tracking": tt.val}, Snapshots: tt.snap})
		got := ""
		if len(r.Violations) > 0 {
			got = r.Violations[0].Message
		}
		if got != tt.want {
			t.Errorf("%v %q: %q, want %q", tt.snap, tt.val, got, tt.want)
		}
	}
}

// Semantic rules are left to a classifier, with their values; a missing or
// oversized value is refused without one.
func TestSemanticQuestions(t *testing.T) {
	t.Parallel()
	sr := SemanticRule{Field: "why", Question: "Is this acceptable?"}
	step := ContractStep{Required: []string{"why"}, SemanticRules: []SemanticRule{sr}}
	r := CheckStepContent(step, ContentCheck{Status: StepStatusSuccess, Context: map[string]string{"why": "ok"}})
	if !r.OK() || len(r.Semantic) != 1 || r.Semantic[0].Value != "ok" || r.Semantic[0].Rule.Threshold() != DefaultSemanticMinProbability {
		t.Errorf("semantic %+v", r)
	}
	r = CheckStepContent(step, ContentCheck{Status: StepStatusSuccess, Context: map[string]string{"why": strings.Repeat("x", 4097)}})
	if r.OK() || r.Violations[0].Message != `semantic field "why" is missing or too long` || r.Semantic != nil {
		t.Errorf("too long: %+v", r)
	}
}

func TestValidateContentRule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		r   ContentRule
		err string
	}{
		{ContentRule{Field: " ", Operator: OpNumber}, "content rule field cannot be empty"},
		{ContentRule{Field: "f", Operator: "like"}, `unsupported content operator "like"`},
		{ContentRule{Field: "f", Operator: OpNumber, Value: "1"}, "number does not accept operands"},
		{ContentRule{Field: "f", Operator: OpOneOf}, "one_of requires a nonempty values list"},
		{ContentRule{Field: "f", Operator: OpGT, Value: "x"}, "f bound: expected a JSON-style number"},
		{ContentRule{Field: "f", Operator: OpMatches, Value: "["}, "f regex: invalid pattern: error parsing regexp: missing closing ]: `[`"},
		{ContentRule{Field: "f", Operator: OpMatches}, "f regex: pattern must contain 1 to 4096 bytes"},
		{ContentRule{Field: "f", Operator: OpEquals, Reference: &StepFieldRef{Step: "a.b", Field: "c"}}, "references require simple step and field identifiers"},
		{ContentRule{Field: "f", Operator: OpEquals, Value: "x", Reference: &StepFieldRef{Step: "a", Field: "c"}}, "references require equals without a literal operand"},
		{ContentRule{Field: "f", Operator: OpEquals, Value: "x"}, ""},
	}
	for _, tt := range tests {
		err := ValidateContentRule(tt.r)
		if got := fmt.Sprint(err); tt.err == "" && err != nil || tt.err != "" && got != tt.err {
			t.Errorf("%+v: %v, want %q", tt.r, err, tt.err)
		}
	}
}

// The pattern cache compiles a pattern once and never holds more than its
// bound.
func TestPatternCacheIsBounded(t *testing.T) {
	t.Parallel()
	c := newPatternCache(3)
	for i := 0; i < 10; i++ {
		src := fmt.Sprintf("a%d", i)
		c.put(src, nil)
		if c.len() > 3 {
			t.Fatalf("cache holds %d", c.len())
		}
	}
	if _, ok := c.get("a9"); !ok {
		t.Error("latest pattern evicted")
	}
	if _, ok := c.get("a0"); ok {
		t.Error("oldest pattern kept")
	}
	a, err1 := CompileContentPattern(`^x+$`)
	b, err2 := CompileContentPattern(`^x+$`)
	if err := errors.Join(err1, err2); err != nil || a != b {
		t.Errorf("compiled twice: %v", err)
	}
}

func TestDetectContractFormat(t *testing.T) {
	t.Parallel()
	tests := map[string]ContractFormat{
		"Feature: x\n":                      ContractFormatGherkin,
		"\ufeff# c\n\n  Feature: x":         ContractFormatGherkin,
		"contract_name: x\nFeature: y":      ContractFormatYAML,
		"# Feature: x\ncontract_name: x\n":  ContractFormatYAML,
		"":                                  ContractFormatYAML,
		`{"contract_name": "x"}`:            ContractFormatYAML,
		"feature: x":                        ContractFormatYAML,
		"\r\n\t# comment\r\nFeature: a\r\n": ContractFormatGherkin,
	}
	for src, want := range tests {
		if got := DetectContractFormat([]byte(src)); got != want {
			t.Errorf("%q: %s, want %s", src, got, want)
		}
	}
}
