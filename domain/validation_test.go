package domain

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

func mustContract(t *testing.T, src string) Contract {
	t.Helper()
	c, err := ParseContract([]byte(src))
	if err != nil {
		t.Fatalf("ParseContract: %v %v", err, ContractProblems(err))
	}
	return c
}

func TestValidateStep(t *testing.T) {
	t.Parallel()
	c := mustContract(t, validContractYAML)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ok := func(names ...string) []RecordedStep {
		out := make([]RecordedStep, len(names))
		for i, n := range names {
			out[i] = RecordedStep{Name: n, Status: "success", Attempt: 1, RecordedAt: t0.Add(time.Duration(i) * time.Second)}
		}
		return out
	}
	validateCtx := map[string]string{"items": "3", "coupon": "X"}
	payCtx := map[string]string{"amount": "5"}

	tests := []struct {
		name   string
		c      Contract
		snap   ThreadSnapshot
		in     StepInput
		now    time.Time
		want   []string // "type/severity", sorted
		status string
	}{
		{
			name: "clean entry step",
			snap: ThreadSnapshot{StartedAt: t0},
			in:   StepInput{Name: "validate", Status: "success", Context: validateCtx, Attempt: 1, Party: "checkout"},
			want: nil, status: "passed",
		},
		{
			name: "first step not an entry point",
			snap: ThreadSnapshot{StartedAt: t0},
			in:   StepInput{Name: "pay", Status: "success", Context: payCtx, Attempt: 1},
			want: []string{"invalid_entry_point/critical"}, status: "violated",
		},
		{
			name: "entry point after only failed attempts is still the entry",
			snap: ThreadSnapshot{StartedAt: t0, Steps: []RecordedStep{{Name: "validate", Status: "failed", Attempt: 1}}},
			in:   StepInput{Name: "validate", Status: "success", Context: validateCtx, Attempt: 2},
			want: []string{"retry_attempted/minor"}, status: "warning",
		},
		{
			name: "allowed transition",
			snap: ThreadSnapshot{StartedAt: t0, Steps: ok("validate")},
			in:   StepInput{Name: "pay", Status: "success", Context: payCtx, Attempt: 1},
			want: nil, status: "passed",
		},
		{
			name: "transition not allowed",
			snap: ThreadSnapshot{StartedAt: t0, Steps: ok("validate")},
			in:   StepInput{Name: "ship", Status: "success", Attempt: 1},
			want: []string{"invalid_transition/critical"}, status: "violated",
		},
		{
			name: "transition judged from last successful step, not last failed one",
			snap: ThreadSnapshot{StartedAt: t0, Steps: append(ok("validate"), RecordedStep{Name: "pay", Status: "failed", Attempt: 1})},
			in:   StepInput{Name: "pay", Status: "success", Context: payCtx, Attempt: 2},
			want: []string{"retry_attempted/minor"}, status: "warning",
		},
		{
			name: "no outgoing transitions from previous step",
			snap: ThreadSnapshot{StartedAt: t0, Steps: ok("validate", "pay", "cancelled")},
			in:   StepInput{Name: "validate", Status: "success", Context: validateCtx, Attempt: 1},
			want: []string{"invalid_transition/critical"}, status: "violated",
		},
		{
			name: "undocumented step",
			snap: ThreadSnapshot{StartedAt: t0, Steps: ok("validate")},
			in:   StepInput{Name: "refund", Status: "success", Context: map[string]string{"x": "1"}, Attempt: 3, Party: "nobody"},
			want: []string{"invalid_transition/critical"}, status: "violated",
		},
		{
			name: "wrong party",
			snap: ThreadSnapshot{StartedAt: t0},
			in:   StepInput{Name: "validate", Status: "success", Context: validateCtx, Attempt: 1, Party: "warehouse"},
			want: []string{"unauthorized_owner/critical"}, status: "violated",
		},
		{
			name: "wrong party from snapshot role",
			snap: ThreadSnapshot{StartedAt: t0, Role: "warehouse"},
			in:   StepInput{Name: "validate", Status: "success", Context: validateCtx, Attempt: 1},
			want: []string{"unauthorized_owner/critical"}, status: "violated",
		},
		{
			name: "input party overrides snapshot role",
			snap: ThreadSnapshot{StartedAt: t0, Role: "warehouse"},
			in:   StepInput{Name: "validate", Status: "success", Context: validateCtx, Attempt: 1, Party: "checkout"},
			want: nil, status: "passed",
		},
		{
			name: "missing required field",
			snap: ThreadSnapshot{StartedAt: t0},
			in:   StepInput{Name: "validate", Status: "success", Context: map[string]string{"coupon": "X"}, Attempt: 1},
			want: []string{"missing_required_field/major"}, status: "violated",
		},
		{
			name: "failed attempt need not carry required fields",
			snap: ThreadSnapshot{StartedAt: t0},
			in:   StepInput{Name: "validate", Status: "failed", Context: map[string]string{"coupon": "X"}, Attempt: 1},
			want: nil, status: "passed",
		},
		{
			name: "missing optional and extra fields are info only",
			snap: ThreadSnapshot{StartedAt: t0},
			in:   StepInput{Name: "validate", Status: "success", Context: map[string]string{"items": "1", "zeta": "z", "alpha": "a", "private_items": "1"}, Attempt: 1},
			want: []string{"extra_undocumented_field/info", "extra_undocumented_field/info", "missing_optional_field/info"}, status: "passed",
		},
		{
			name: "step documenting no context reports no extras",
			snap: ThreadSnapshot{StartedAt: t0, Steps: ok("validate", "pay")},
			in:   StepInput{Name: "ship", Status: "success", Context: map[string]string{"carrier": "ups"}, Attempt: 1},
			want: nil, status: "passed",
		},
		{
			name: "retry within max_retries",
			snap: ThreadSnapshot{StartedAt: t0, Steps: ok("validate")},
			in:   StepInput{Name: "pay", Status: "success", Context: payCtx, Attempt: 4},
			want: []string{"retry_attempted/minor"}, status: "warning",
		},
		{
			name: "retry over max_retries",
			snap: ThreadSnapshot{StartedAt: t0, Steps: ok("validate")},
			in:   StepInput{Name: "pay", Status: "failed", Context: payCtx, Attempt: 5},
			want: []string{"retry_attempted/minor", "retry_limit_exceeded/major"}, status: "violated",
		},
		{
			name: "retry when can_retry is false",
			snap: ThreadSnapshot{StartedAt: t0, Steps: ok("validate", "pay")},
			in:   StepInput{Name: "ship", Status: "success", Attempt: 2},
			want: []string{"retry_attempted/minor", "retry_limit_exceeded/major"}, status: "violated",
		},
		{
			name: "retry of a step without outgoing transition is unlimited",
			snap: ThreadSnapshot{StartedAt: t0, Steps: ok("validate", "pay")},
			in:   StepInput{Name: "cancelled", Status: "success", Attempt: 9},
			want: []string{"retry_attempted/minor"}, status: "warning",
		},
		{
			name: "step timeout exceeded",
			snap: ThreadSnapshot{StartedAt: t0},
			in:   StepInput{Name: "validate", Status: "success", Context: validateCtx, Attempt: 1, StartedAt: t0, FinishedAt: t0.Add(31 * time.Second)},
			want: []string{"step_timeout_exceeded/major"}, status: "violated",
		},
		{
			name: "step timeout exactly met",
			snap: ThreadSnapshot{StartedAt: t0},
			in:   StepInput{Name: "validate", Status: "success", Context: validateCtx, Attempt: 1, StartedAt: t0, FinishedAt: t0.Add(30 * time.Second)},
			want: nil, status: "passed",
		},
		{
			name: "max duration exceeded",
			snap: ThreadSnapshot{StartedAt: t0, Steps: ok("validate")},
			in:   StepInput{Name: "pay", Status: "success", Context: payCtx, Attempt: 1},
			now:  t0.Add(48*time.Hour + time.Second),
			want: []string{"max_duration_exceeded/major"}, status: "violated",
		},
		{
			name: "max duration checked even for undocumented steps",
			snap: ThreadSnapshot{StartedAt: t0, Steps: ok("validate")},
			in:   StepInput{Name: "nope", Status: "success", Attempt: 1},
			now:  t0.Add(72 * time.Hour),
			want: []string{"invalid_transition/critical", "max_duration_exceeded/major"}, status: "violated",
		},
		{
			name: "second terminal uses contract severity",
			snap: ThreadSnapshot{StartedAt: t0, Steps: ok("validate", "pay", "ship")},
			in:   StepInput{Name: "cancelled", Status: "success", Attempt: 1},
			want: []string{"multiple_terminal_states/warning"}, status: "warning",
		},
		{
			name: "second terminal allowed",
			c:    withAllowMultiple(c),
			snap: ThreadSnapshot{StartedAt: t0, Steps: ok("validate", "pay", "ship")},
			in:   StepInput{Name: "cancelled", Status: "success", Attempt: 1},
			want: nil, status: "passed",
		},
		{
			name: "second terminal default severity minor",
			c:    withSeverity(c, ""),
			snap: ThreadSnapshot{StartedAt: t0, Steps: ok("validate", "pay", "ship")},
			in:   StepInput{Name: "cancelled", Status: "success", Attempt: 1},
			want: []string{"multiple_terminal_states/minor"}, status: "warning",
		},
		{
			name: "failed terminal attempt is not a second terminal",
			snap: ThreadSnapshot{StartedAt: t0, Steps: ok("validate", "pay", "ship")},
			in:   StepInput{Name: "cancelled", Status: "failed", Attempt: 1},
			want: nil, status: "passed",
		},
		{
			name:   "many rules at once",
			snap:   ThreadSnapshot{StartedAt: t0},
			in:     StepInput{Name: "pay", Status: "success", Context: map[string]string{"tip": "1"}, Attempt: 6, Party: "warehouse", StartedAt: t0, FinishedAt: t0.Add(time.Hour)},
			now:    t0.Add(49 * time.Hour),
			want:   []string{"extra_undocumented_field/info", "invalid_entry_point/critical", "max_duration_exceeded/major", "missing_required_field/major", "retry_attempted/minor", "retry_limit_exceeded/major", "step_timeout_exceeded/major", "unauthorized_owner/critical"},
			status: "violated",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc := c
			if tt.c.Name != "" {
				cc = tt.c
			}
			now := tt.now
			if now.IsZero() {
				now = t0.Add(time.Minute)
			}
			r := ValidateStep(cc, tt.snap, tt.in, now)
			var got []string
			for _, is := range r.Issues {
				got = append(got, is.Type+"/"+string(is.Severity))
				if is.Message == "" {
					t.Errorf("issue %s has no message", is.Type)
				}
			}
			sort.Strings(got)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("issues = %v, want %v\n%+v", got, tt.want, r.Issues)
			}
			if r.OverallStatus != tt.status {
				t.Errorf("overall status = %q, want %q", r.OverallStatus, tt.status)
			}
		})
	}
}

func withAllowMultiple(c Contract) Contract { c.AllowMultipleTerminals = true; return c }
func withSeverity(c Contract, s Severity) Contract {
	c.MultipleTerminalsSeverity = s
	return c
}

func TestValidateStepMessages(t *testing.T) {
	t.Parallel()
	c := mustContract(t, validContractYAML)
	t0 := time.Now()
	r := ValidateStep(c, ThreadSnapshot{StartedAt: t0, Steps: []RecordedStep{{Name: "validate", Status: "success"}}},
		StepInput{Name: "ship", Status: "success", Attempt: 1, Party: "warehouse"}, t0)
	if len(r.Issues) != 1 {
		t.Fatalf("issues = %+v", r.Issues)
	}
	is := r.Issues[0]
	if is.Rule != RuleTransitions || is.Expected != "pay" || is.Actual != "validate -> ship" || !strings.Contains(is.Message, `from "validate" to "ship"`) {
		t.Errorf("transition issue = %+v", is)
	}
	r = ValidateStep(c, ThreadSnapshot{}, StepInput{Name: "ghost", Status: "success"}, t0)
	if is := r.Issues[0]; is.Rule != RuleUndocumentedStep || !strings.Contains(is.Message, "order_flow:2") {
		t.Errorf("undocumented issue = %+v", is)
	}
}

func TestNewValidationResultCounts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		sevs                           []Severity
		status                         string
		critical, warning, minor, info int
	}{
		{nil, "passed", 0, 0, 0, 0},
		{[]Severity{SeverityInfo, SeverityInfo}, "passed", 0, 0, 0, 2},
		{[]Severity{SeverityMinor}, "warning", 0, 0, 1, 0},
		{[]Severity{SeverityWarning, SeverityInfo}, "warning", 0, 1, 0, 1},
		{[]Severity{SeverityMajor}, "violated", 1, 0, 0, 0},
		{[]Severity{SeverityCritical, SeverityMajor, SeverityMinor, SeverityWarning, SeverityInfo}, "violated", 2, 1, 1, 1},
	}
	for _, tt := range tests {
		var issues []ValidationIssue
		for _, s := range tt.sevs {
			issues = append(issues, ValidationIssue{Type: "x", Severity: s})
		}
		r := NewValidationResult(issues)
		if r.OverallStatus != tt.status || r.CriticalCount != tt.critical || r.WarningCount != tt.warning ||
			r.MinorCount != tt.minor || r.InfoCount != tt.info || r.HasCritical != (tt.critical > 0) || r.FailsThread() != (tt.critical > 0) {
			t.Errorf("%v: got %+v", tt.sevs, r)
		}
		if r.Issues == nil {
			t.Errorf("%v: Issues must be non-nil", tt.sevs)
		}
	}
}

func TestMostSevere(t *testing.T) {
	t.Parallel()
	r := NewValidationResult([]ValidationIssue{{Type: "a", Severity: SeverityInfo}, {Type: "b", Severity: SeverityMajor}, {Type: "c", Severity: SeverityCritical}, {Type: "d", Severity: SeverityCritical}})
	if is, ok := r.MostSevere(); !ok || is.Type != "c" {
		t.Errorf("MostSevere = %+v %v", is, ok)
	}
	if _, ok := NewValidationResult(nil).MostSevere(); ok {
		t.Error("MostSevere of no issues reported one")
	}
}

func TestCompletesThread(t *testing.T) {
	t.Parallel()
	c := mustContract(t, validContractYAML)
	clean := NewValidationResult(nil)
	bad := NewValidationResult([]ValidationIssue{{Type: IssueMissingRequiredField, Severity: SeverityMajor}})
	minor := NewValidationResult([]ValidationIssue{{Type: IssueRetryAttempted, Severity: SeverityMinor}})
	tests := []struct {
		name   string
		r      ValidationResult
		s      StepInput
		expect bool
	}{
		{"terminal success", clean, StepInput{Name: "ship", Status: "success"}, true},
		{"terminal completed", clean, StepInput{Name: "ship", Status: "completed"}, true},
		{"terminal with minor issue", minor, StepInput{Name: "cancelled", Status: "success"}, true},
		{"terminal failed", clean, StepInput{Name: "ship", Status: "failed"}, false},
		{"terminal with thread-failing issue", bad, StepInput{Name: "ship", Status: "success"}, false},
		{"not terminal", clean, StepInput{Name: "pay", Status: "success"}, false},
		{"unknown", clean, StepInput{Name: "ghost", Status: "success"}, false},
	}
	for _, tt := range tests {
		if got := tt.r.CompletesThread(c, tt.s); got != tt.expect {
			t.Errorf("%s: CompletesThread = %v", tt.name, got)
		}
	}
}

func TestParseSeverity(t *testing.T) {
	t.Parallel()
	for _, s := range Severities {
		if got, err := ParseSeverity(string(s)); err != nil || got != s {
			t.Errorf("ParseSeverity(%q) = %q, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "error", "Critical", "fatal"} {
		if _, err := ParseSeverity(s); err == nil {
			t.Errorf("ParseSeverity(%q) accepted", s)
		}
	}
	if !SeverityMajor.FailsThread() || !SeverityCritical.FailsThread() || SeverityMinor.FailsThread() || SeverityWarning.FailsThread() || SeverityInfo.FailsThread() {
		t.Error("FailsThread mapping wrong")
	}
}

func BenchmarkValidateStep(b *testing.B) {
	c, err := ParseContract([]byte(validContractYAML))
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	snap := ThreadSnapshot{StartedAt: t0, Steps: []RecordedStep{{Name: "validate", Status: "success"}}}
	in := StepInput{Name: "pay", Status: "success", Context: map[string]string{"amount": "5", "x": "y"}, Attempt: 2, Party: "checkout"}
	for i := 0; i < b.N; i++ {
		ValidateStep(c, snap, in, t0)
	}
}
