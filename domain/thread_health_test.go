package domain

import (
	"testing"
	"time"
)

func TestThreadHealthFold(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	crit := ValidationIssue{Type: IssueInvalidTransition, Severity: SeverityCritical, Message: "bad transition"}
	major := ValidationIssue{Type: IssueMissingRequiredField, Severity: SeverityMajor, Message: "missing amount"}
	minor := ValidationIssue{Type: IssueRetryAttempted, Severity: SeverityMinor, Message: "retried"}
	warn := ValidationIssue{Type: "x", Severity: SeverityWarning, Message: "w"}
	info := ValidationIssue{Type: IssueMissingOptionalField, Severity: SeverityInfo, Message: "i"}
	later := t0.Add(3 * time.Second)

	tests := []struct {
		name         string
		steps        []StepOutcome
		threadStatus string
		want         ThreadHealth
		status       HealthStatus
	}{
		{name: "no steps", threadStatus: "active", want: ThreadHealth{}, status: HealthOK},
		{name: "clean success", threadStatus: "completed",
			steps: []StepOutcome{{StepName: "a", Status: "success", RecordedAt: t0, Issues: []ValidationIssue{info}}},
			want:  ThreadHealth{LastActivityAt: t0}, status: HealthOK},
		{name: "minor and warning count as warnings", threadStatus: "completed",
			steps: []StepOutcome{{StepName: "a", Status: "success", RecordedAt: t0, Issues: []ValidationIssue{minor, warn}}},
			want:  ThreadHealth{Warnings: 2, LastActivityAt: t0}, status: HealthWarning},
		{name: "critical on a completed thread is violated, never OK", threadStatus: "completed",
			steps: []StepOutcome{
				{StepName: "a", Status: "success", RecordedAt: t0, Issues: []ValidationIssue{minor}},
				{StepName: "b", Status: "success", RecordedAt: t0, Issues: []ValidationIssue{crit, major}},
				{StepName: "c", Status: "success", RecordedAt: t0, Issues: []ValidationIssue{major}},
			},
			want: ThreadHealth{Critical: 1, Major: 2, Warnings: 1, LastActivityAt: t0,
				FirstIssue: &HealthIssue{StepName: "b", Type: IssueInvalidTransition, Message: "bad transition", Severity: SeverityCritical}},
			status: HealthViolated},
		{name: "failed step on a free-form active thread", threadStatus: "active",
			steps: []StepOutcome{{StepName: "pay", Status: "failed", Error: "card declined", RecordedAt: t0}},
			want: ThreadHealth{FailedSteps: 1, LastActivityAt: t0,
				FirstIssue: &HealthIssue{StepName: "pay", Type: IssueStepFailed, Message: "card declined"}},
			status: HealthFailed},
		{name: "failed step without error text", threadStatus: "active",
			steps: []StepOutcome{{StepName: "pay", Status: "error", RecordedAt: t0}},
			want: ThreadHealth{FailedSteps: 1, LastActivityAt: t0,
				FirstIssue: &HealthIssue{StepName: "pay", Type: IssueStepFailed, Message: `Step "pay" error`}},
			status: HealthFailed},
		{name: "retry that succeeds clears the failed count but keeps the first issue", threadStatus: "active",
			steps: []StepOutcome{
				{StepName: "pay", Status: "failed", Error: "timeout", RecordedAt: t0},
				{StepName: "pay", Status: "failed", PrevStatus: "failed", Error: "again", RecordedAt: t0},
				{StepName: "pay", Status: "success", PrevStatus: "failed", RecordedAt: t0, Issues: []ValidationIssue{minor}},
			},
			want: ThreadHealth{Warnings: 1, LastActivityAt: t0,
				FirstIssue: &HealthIssue{StepName: "pay", Type: IssueStepFailed, Message: "timeout"}},
			status: HealthWarning},
		{name: "a later violation replaces a failed attempt as the first issue", threadStatus: "active",
			steps: []StepOutcome{
				{StepName: "pay", Status: "failed", Error: "timeout", RecordedAt: t0},
				{StepName: "ship", Status: "success", RecordedAt: t0, Issues: []ValidationIssue{major}},
				{StepName: "x", Status: "success", RecordedAt: t0, Issues: []ValidationIssue{crit}},
			},
			want: ThreadHealth{FailedSteps: 1, Critical: 1, Major: 1, LastActivityAt: t0,
				FirstIssue: &HealthIssue{StepName: "ship", Type: IssueMissingRequiredField, Message: "missing amount", Severity: SeverityMajor}},
			status: HealthViolated},
		{name: "a violation that failed the thread is named as the violation", threadStatus: "failed",
			steps: []StepOutcome{{StepName: "pay", Status: "success", RecordedAt: t0, Issues: []ValidationIssue{crit}}},
			want: ThreadHealth{Critical: 1, LastActivityAt: t0,
				FirstIssue: &HealthIssue{StepName: "pay", Type: IssueInvalidTransition, Message: "bad transition", Severity: SeverityCritical}},
			status: HealthViolated},
		{name: "thread failed without failed steps", threadStatus: "failed",
			steps: []StepOutcome{{StepName: "a", Status: "success", RecordedAt: t0}},
			want:  ThreadHealth{LastActivityAt: t0}, status: HealthFailed},
		{name: "last activity is the latest finish or record time", threadStatus: "active",
			steps: []StepOutcome{
				{StepName: "a", Status: "success", RecordedAt: t0, FinishedAt: &later},
				{StepName: "b", Status: "success", RecordedAt: t0.Add(time.Second)},
			},
			want: ThreadHealth{LastActivityAt: later}, status: HealthOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h ThreadHealth
			for _, s := range tc.steps {
				h = h.Fold(s)
			}
			if h.FailedSteps != tc.want.FailedSteps || h.Critical != tc.want.Critical || h.Major != tc.want.Major ||
				h.Warnings != tc.want.Warnings || !h.LastActivityAt.Equal(tc.want.LastActivityAt) {
				t.Fatalf("health = %+v, want %+v", h, tc.want)
			}
			switch {
			case (h.FirstIssue == nil) != (tc.want.FirstIssue == nil):
				t.Fatalf("first issue = %+v, want %+v", h.FirstIssue, tc.want.FirstIssue)
			case h.FirstIssue != nil && *h.FirstIssue != *tc.want.FirstIssue:
				t.Fatalf("first issue = %+v, want %+v", *h.FirstIssue, *tc.want.FirstIssue)
			}
			if got := h.Status(tc.threadStatus); got != tc.status {
				t.Fatalf("status = %s, want %s", got, tc.status)
			}
		})
	}
}

func TestThreadHealthDuration(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	end := start.Add(90 * time.Second)
	h := ThreadHealth{LastActivityAt: start.Add(10 * time.Second)}
	if d := h.Duration(start, nil); d != 10*time.Second {
		t.Fatalf("active duration = %s", d)
	}
	if d := h.Duration(start, &end); d != 90*time.Second {
		t.Fatalf("ended duration = %s", d)
	}
	if d := (ThreadHealth{}).Duration(start, nil); d != 0 {
		t.Fatalf("no activity = %s", d)
	}
	before := start.Add(-time.Second)
	if d := h.Duration(start, &before); d != 0 {
		t.Fatalf("end before start = %s", d)
	}
}

func TestParseHealthStatus(t *testing.T) {
	t.Parallel()
	for _, s := range HealthStatuses {
		if got, err := ParseHealthStatus(string(s)); err != nil || got != s {
			t.Fatalf("%s: %v %v", s, got, err)
		}
	}
	if _, err := ParseHealthStatus("ok"); KindOf(err) != KindInvalid {
		t.Fatalf("lower case accepted: %v", err)
	}
}
