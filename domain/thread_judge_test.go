package domain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/domain/gherkin"
)

var j0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// compile compiles a Gherkin source or fails the test.
func compile(t *testing.T, src string) *domain.Contract {
	t.Helper()
	res, err := gherkin.Compile([]byte(src), nil)
	if err != nil || len(res.Problems) > 0 {
		t.Fatalf("compile: %v %v", err, res.Problems)
	}
	c := res.Contract
	return &c
}

const paymentSrc = `Feature: payment
Rule: Approve
  When step "approval" is submitted
  Then owner must be "ops"
  And this step is an entry point
  And content "reference" must not be empty
  And content "urgent" must be a boolean
  And content "note" is optional

Rule: Charge
  When step "charge" is submitted
  Then owner must be "ops"
  And step "approval" must succeed before each invocation
  And content "amount" must be a number greater than 0
  And content "amount" must be a number less than or equal to 1000.50
  And content "currency" must be one of "GBP", "USD", "EUR"
  And content "reference" must equal approval.reference
  And content "reference" must match regex "^REF-[0-9]{3}$"
  And content "channel" must equal "web"
  And content "count" must be a number
  And content "memo" must be present
  And this step is terminal
`

// TestJudgeContentClauseTable: each content clause refuses exactly the
// values it should, with content_rule_failed naming the field and rule.
func TestJudgeContentClauseTable(t *testing.T) {
	t.Parallel()
	c := compile(t, paymentSrc)
	charge, _ := c.Step("charge")
	approval, _ := c.Step("approval")
	good := map[string]string{"amount": "12.50", "currency": "GBP", "reference": "REF-123", "channel": "web", "count": "3", "memo": ""}
	snap := map[string]map[string]string{"approval": {"reference": "REF-123"}}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range good {
			m[a] = b
		}
		if v == "\x00delete" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	cases := []struct {
		name      string
		step      domain.ContractStep
		status    domain.StepStatus
		ctx       map[string]string
		snaps     map[string]map[string]string
		field     string // "" = accepted
		rule      string
		msgSubstr string
	}{
		{"valid", charge, domain.StepStatusSuccess, good, snap, "", "", ""},
		{"amount 0 (gt)", charge, domain.StepStatusSuccess, with("amount", "0"), snap, "amount", "gt", `greater than 0`},
		{"amount exact decimal bound", charge, domain.StepStatusSuccess, with("amount", "1000.5"), snap, "", "", ""},
		{"amount over bound", charge, domain.StepStatusSuccess, with("amount", "1000.500001"), snap, "amount", "lte", "less than or equal to 1000.50"},
		{"amount not a number", charge, domain.StepStatusSuccess, with("amount", "12,5"), snap, "amount", "gt", ""},
		{"amount +1 is no JSON number", charge, domain.StepStatusSuccess, with("amount", "+1"), snap, "amount", "gt", ""},
		{"currency JPY (one_of)", charge, domain.StepStatusSuccess, with("currency", "JPY"), snap, "currency", "one_of", `"GBP", "USD", "EUR"`},
		{"currency case-sensitive", charge, domain.StepStatusSuccess, with("currency", "gbp"), snap, "currency", "one_of", ""},
		{"equals literal", charge, domain.StepStatusSuccess, with("channel", "app"), snap, "channel", "equals", `must equal "web"`},
		{"number", charge, domain.StepStatusSuccess, with("count", "three"), snap, "count", "number", ""},
		{"regex", charge, domain.StepStatusSuccess, with("reference", "REF-12"), map[string]map[string]string{"approval": {"reference": "REF-12"}}, "reference", "matches", ""},
		{"reference differs", charge, domain.StepStatusSuccess, with("reference", "REF-999"), snap, "reference", "equals", "approval.reference"},
		{"reference step never succeeded", charge, domain.StepStatusSuccess, good, nil, "reference", "equals", "cannot resolve step reference approval.reference"},
		{"referenced field missing", charge, domain.StepStatusSuccess, good, map[string]map[string]string{"approval": {}}, "reference", "equals", "missing from the latest successful step"},
		{"content field missing on success", charge, domain.StepStatusSuccess, with("currency", "\x00delete"), snap, "currency", "required", `required content field "currency" is missing`},
		{"present clause: empty is fine", charge, domain.StepStatusSuccess, with("memo", ""), snap, "", "", ""},
		{"failed attempt judged on what it carries", charge, domain.StepStatusFailed, map[string]string{"amount": "5"}, nil, "", "", ""},
		{"failed attempt still refused on a bad value", charge, domain.StepStatusFailed, map[string]string{"amount": "-5"}, nil, "amount", "gt", ""},
		{"nonempty", approval, domain.StepStatusSuccess, map[string]string{"reference": "  ", "urgent": "true"}, nil, "reference", "nonempty", "must not be empty"},
		{"boolean", approval, domain.StepStatusSuccess, map[string]string{"reference": "REF-1", "urgent": "yes"}, nil, "urgent", "boolean", ""},
		{"boolean ok, optional absent", approval, domain.StepStatusSuccess, map[string]string{"reference": "REF-1", "urgent": "false"}, nil, "", "", ""},
		{"undeclared field is not judged", approval, domain.StepStatusSuccess, map[string]string{"reference": "REF-1", "urgent": "false", "x": ""}, nil, "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := domain.JudgeContent(tc.step, tc.status, tc.ctx, tc.snaps)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			e := domain.AsError(err)
			if e == nil || e.Code != domain.CodeContentRuleFailed {
				t.Fatalf("err = %v, want content_rule_failed", err)
			}
			vs := e.Details["violations"].([]domain.ContentViolation)
			if vs[0].Field != tc.field || vs[0].Rule != tc.rule || e.Field != "context."+tc.field {
				t.Fatalf("first violation %+v (error field %q), want %s/%s", vs[0], e.Field, tc.field, tc.rule)
			}
			if !strings.Contains(e.Message, tc.field) || !strings.Contains(e.Message, tc.msgSubstr) {
				t.Fatalf("message %q should name %q and contain %q", e.Message, tc.field, tc.msgSubstr)
			}
		})
	}
}

// TestJudgeContentLeavesRequiredFieldsToValidation: a field only required
// (YAML business_context, "Required context") is never a refusal.
func TestJudgeContentLeavesRequiredFieldsToValidation(t *testing.T) {
	t.Parallel()
	step := domain.ContractStep{Name: "pay", Required: []string{"amount"}}
	if err := domain.JudgeContent(step, domain.StepStatusSuccess, map[string]string{}, nil); err != nil {
		t.Fatalf("refused: %v", err)
	}
}

func payThread(t *testing.T, c *domain.Contract) (*domain.Thread, domain.Actor) {
	t.Helper()
	a := domain.Actor{PrincipalKind: "service_account", PrincipalID: "k1", Role: "ops"}
	th, err := domain.NewThread("t1", a, c, j0)
	if err != nil {
		t.Fatal(err)
	}
	return &th, a
}

// TestRecordStepRefusalChangesNothing: a refused step leaves the thread
// exactly as it was (status, times, counts).
func TestRecordStepRefusalChangesNothing(t *testing.T) {
	t.Parallel()
	c := compile(t, paymentSrc)
	th, a := payThread(t, c)
	before := *th
	_, err := th.RecordStep(a, c, domain.StepAttempt{Name: "approval", Status: domain.StepStatusSuccess,
		Context: map[string]string{"reference": "", "urgent": "true"}}, nil, nil, j0.Add(time.Minute))
	if domain.CodeOf(err) != domain.CodeContentRuleFailed {
		t.Fatalf("err = %v", err)
	}
	if th.Status != before.Status || !th.UpdatedAt.Equal(before.UpdatedAt) || th.StepCount() != before.StepCount() || th.CompletedAt != nil {
		t.Fatalf("thread changed: %+v", th)
	}
	d, err := th.RecordStep(a, c, domain.StepAttempt{Name: "approval", Status: domain.StepStatusSuccess,
		Context: map[string]string{"reference": "REF-1", "urgent": "true"}}, nil, nil, j0.Add(time.Minute))
	if err != nil || d.Validation == nil || d.Validation.OverallStatus != domain.ValidationPassed {
		t.Fatalf("valid approval: %v %+v", err, d.Validation)
	}
}

const freshSrc = `Feature: fresh
Rule: Approve
  When step "approve" is submitted
  Then owner must be "ops"
  And this step is an entry point

Rule: Charge
  When step "charge" is submitted
  Then owner must be "ops"
  And step "approve" must succeed before each invocation

Rule: Close
  When step "close" is submitted
  Then owner must be "ops"
  And step "approve" must have succeeded
  And this step is terminal
`

func succeeded(id, name string, at time.Time) domain.RecordedStep {
	return domain.RecordedStep{ID: id, Name: name, Status: "success", RecordedAt: at, Attempt: 1}
}

// TestFreshPrerequisiteGrants: one approval allows one grant; a second
// waits for the next approval; cancelling a grant restores nothing; a
// plain prerequisite is never consumed.
func TestFreshPrerequisiteGrants(t *testing.T) {
	t.Parallel()
	c := compile(t, freshSrc)
	th, a := payThread(t, c)
	now := j0.Add(time.Minute)
	var grants []domain.StepGrant

	if p := th.PermitStep(a, c, "charge", "i1", nil, grants, now); p.Allowed || p.Denied {
		t.Fatalf("no approval yet: %+v, want pending", p)
	}
	h := []domain.RecordedStep{succeeded("a1", "approve", now)}
	p := th.PermitStep(a, c, "charge", "i1", h, grants, now)
	if !p.Allowed || strings.Join(p.Grant.FreshConsumed, ",") != "a1" {
		t.Fatalf("first charge: %+v", p)
	}
	grants = append(grants, p.Grant)
	if p := th.PermitStep(a, c, "charge", "i1", h, grants, now); !p.Allowed || p.New {
		t.Fatalf("same invocation again: %+v, want the same grant", p)
	}
	if p := th.PermitStep(a, c, "charge", "i2", h, grants, now); p.Allowed || p.Denied {
		t.Fatalf("second charge on one approval: %+v, want pending", p)
	}
	cancelled, err := th.CancelGrant(a, grants, "charge", "i1", now)
	if err != nil {
		t.Fatal(err)
	}
	grants[0] = cancelled
	if p := th.PermitStep(a, c, "charge", "i2", h, grants, now); p.Allowed {
		t.Fatalf("cancelling restored the approval: %+v", p)
	}
	// Two approvals recorded before a charge still allow one charge: only
	// the latest success counts.
	h = append(h, succeeded("a2", "approve", now))
	p = th.PermitStep(a, c, "charge", "i2", h, grants, now)
	if !p.Allowed || strings.Join(p.Grant.FreshConsumed, ",") != "a2" {
		t.Fatalf("after a new approval: %+v", p)
	}
	grants = append(grants, p.Grant)
	if p := th.PermitStep(a, c, "close", "i3", h, grants, now); !p.Allowed || len(p.Grant.FreshConsumed) != 0 {
		t.Fatalf("plain prerequisite: %+v", p)
	}
}

// TestFreshPrerequisiteUnguardedReports: a report without a grant consumes
// the approval (Consume), and a second one on the same approval breaks the
// clause (critical: the thread fails); a report under an allowed grant
// consumes nothing more.
func TestFreshPrerequisiteUnguardedReports(t *testing.T) {
	t.Parallel()
	c := compile(t, freshSrc)
	now := j0.Add(time.Minute)
	h := []domain.RecordedStep{succeeded("a1", "approve", now)}

	th, a := payThread(t, c)
	d, err := th.RecordStep(a, c, domain.StepAttempt{Name: "charge", IdempotencyKey: "c1", Status: domain.StepStatusSuccess,
		Context: map[string]string{}}, nil, h, now)
	if err != nil || d.Consume == nil || strings.Join(d.Consume.FreshConsumed, ",") != "a1" || d.Validation.HasCritical {
		t.Fatalf("first charge: %v %+v %+v", err, d.Consume, d.Validation)
	}
	consumed := domain.FreshConsumed([]domain.StepGrant{*d.Consume}, "charge")
	h = append(h, domain.RecordedStep{ID: "c1", Name: "charge", Status: "success", RecordedAt: now})
	d, err = th.RecordStep(a, c, domain.StepAttempt{Name: "charge", IdempotencyKey: "c2", Status: domain.StepStatusSuccess,
		Context: map[string]string{}, FreshConsumed: consumed}, nil, h, now)
	if err != nil || d.Consume != nil || !hasIssue(d.Validation, domain.IssueFreshDependencyRequired) || th.Status != domain.ThreadFailed {
		t.Fatalf("second charge on one approval: %v %+v %+v, thread %s", err, d.Consume, d.Validation, th.Status)
	}

	th2, _ := payThread(t, c)
	d, err = th2.RecordStep(a, c, domain.StepAttempt{Name: "charge", IdempotencyKey: "c1", InvocationID: "i1", Grant: domain.GrantAllowed,
		Status: domain.StepStatusSuccess, Context: map[string]string{}, FreshConsumed: consumed}, nil, h[:1], now)
	if err != nil || d.Consume != nil || d.Validation.HasCritical {
		t.Fatalf("guarded charge: %v %+v %+v", err, d.Consume, d.Validation)
	}
}

func hasIssue(vr *domain.ValidationResult, typ string) bool {
	if vr == nil {
		return false
	}
	for _, is := range vr.Issues {
		if is.Type == typ {
			return true
		}
	}
	return false
}

const groupSrc = `Feature: reviews
Rule: Receive
  When step "received" is submitted
  Then owner must be "ops"
  And this step is an entry point
  And next step must be one of "fraud", "stock"

Rule: Fraud
  When step "fraud" is submitted
  Then owner must be "ops"
  And this step is terminal

Rule: Stock
  When step "stock" is submitted
  Then owner must be "ops"
  And this step is terminal

Group: "reviews"
  Given parallel steps are "fraud", "stock"
  And all parallel steps must succeed
  And combined duration must be within "5m"
`

// TestGroupTable: a terminal member completes the thread only with the
// last member; members are not "multiple terminals"; the group's span from
// first start to last finish is judged against its combined duration.
func TestGroupTable(t *testing.T) {
	t.Parallel()
	c := compile(t, groupSrc)
	start := j0.Add(time.Minute)
	cases := []struct {
		name        string
		stockTook   time.Duration // the second member finishes this long after the first started
		wantIssue   string
		wantStatus  domain.ThreadStatus
		firstStatus domain.ThreadStatus
	}{
		{"within", 4 * time.Minute, "", domain.ThreadCompleted, domain.ThreadActive},
		{"exceeded", 6 * time.Minute, domain.IssueGroupDurationExceeded, domain.ThreadFailed, domain.ThreadActive},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			th, a := payThread(t, c)
			h := []domain.RecordedStep{succeeded("r", "received", start)}
			fs, ff := start, start.Add(time.Minute)
			d, err := th.RecordStep(a, c, domain.StepAttempt{Name: "fraud", IdempotencyKey: "f", Status: domain.StepStatusSuccess,
				Context: map[string]string{}, StartedAt: &fs, FinishedAt: &ff}, nil, h, ff)
			if err != nil || th.Status != tc.firstStatus || d.Ended != "" {
				t.Fatalf("first member: %v, thread %s", err, th.Status)
			}
			h = append(h, domain.RecordedStep{ID: "f", Name: "fraud", Status: "success", RecordedAt: ff, StartedAt: fs, FinishedAt: ff})
			ss, sf := start.Add(time.Second), start.Add(tc.stockTook)
			d, err = th.RecordStep(a, c, domain.StepAttempt{Name: "stock", IdempotencyKey: "s", Status: domain.StepStatusSuccess,
				Context: map[string]string{}, StartedAt: &ss, FinishedAt: &sf}, nil, h, sf)
			if err != nil || th.Status != tc.wantStatus {
				t.Fatalf("last member: %v, thread %s (%+v)", err, th.Status, d.Validation)
			}
			if hasIssue(d.Validation, domain.IssueMultipleTerminalStates) {
				t.Fatalf("group members reported as multiple terminals: %+v", d.Validation)
			}
			if got := hasIssue(d.Validation, domain.IssueGroupDurationExceeded); got != (tc.wantIssue != "") {
				t.Fatalf("group duration issue = %v: %+v", got, d.Validation)
			}
		})
	}
}

// TestBackgroundAtRunTime: day durations bound the thread, terminal
// severity and multiple terminals apply.
func TestBackgroundAtRunTime(t *testing.T) {
	t.Parallel()
	src := `Feature: bg
Background:
  Given the thread must finish within "2d"
  And multiple terminal severity is "warning"
  And threads lock to this version

Rule: A
  When step "a" is submitted
  Then owner must be "ops"
  And this step is an entry point
  And this step is terminal

Rule: B
  When step "b" is submitted
  Then owner must be "ops"
  And this step is an entry point
  And this step is terminal
`
	c := compile(t, src)
	if c.MaxDuration != 48*time.Hour || c.MultipleTerminalsSeverity != domain.SeverityWarning || !c.ThreadsLockToVersion {
		t.Fatalf("compiled background: %v %v %v", c.MaxDuration, c.MultipleTerminalsSeverity, c.ThreadsLockToVersion)
	}
	cases := []struct {
		name    string
		at      time.Duration
		history []domain.RecordedStep
		want    string
		sev     domain.Severity
	}{
		{"within 2d", 47 * time.Hour, nil, "", ""},
		{"after 2d", 49 * time.Hour, nil, domain.IssueMaxDurationExceeded, domain.SeverityMajor},
		{"second terminal", time.Hour, []domain.RecordedStep{succeeded("a", "a", j0)}, domain.IssueMultipleTerminalStates, domain.SeverityWarning},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vr := domain.ValidateStep(*c, domain.ThreadSnapshot{StartedAt: j0, Steps: tc.history},
				domain.StepInput{Name: "b", Status: "success", Party: "ops", Attempt: 1}, j0.Add(tc.at))
			var got *domain.ValidationIssue
			for i := range vr.Issues {
				if vr.Issues[i].Severity != domain.SeverityInfo {
					got = &vr.Issues[i]
				}
			}
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("issue %+v", got)
			case tc.want != "" && (got == nil || got.Type != tc.want || got.Severity != tc.sev):
				t.Fatalf("issues %+v, want %s/%s", vr.Issues, tc.want, tc.sev)
			}
		})
	}
}

// BenchmarkJudgeContent: the payment charge's content rules (bounds, one
// of, literal, regex, reference) on one valid submission.
func BenchmarkJudgeContent(b *testing.B) {
	res, err := gherkin.Compile([]byte(paymentSrc), nil)
	if err != nil || len(res.Problems) > 0 {
		b.Fatal(err, res.Problems)
	}
	charge, _ := res.Contract.Step("charge")
	ctx := map[string]string{"amount": "12.50", "currency": "GBP", "reference": "REF-123", "channel": "web", "count": "3", "memo": ""}
	snap := map[string]map[string]string{"approval": {"reference": "REF-123"}}
	b.ReportAllocs()
	for b.Loop() {
		if err := domain.JudgeContent(charge, domain.StepStatusSuccess, ctx, snap); err != nil {
			b.Fatal(err)
		}
	}
}
