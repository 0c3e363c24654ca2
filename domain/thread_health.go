package domain

import (
	"encoding/json"
	"fmt"
	"time"
)

// HealthStatus is the one-word verdict on a thread a support engineer
// filters by. It is about what went wrong, not about whether the thread is
// still running (that is the thread status): an active thread can already be
// VIOLATED, a completed one can carry WARNINGs.
type HealthStatus string

const (
	HealthOK       HealthStatus = "OK"
	HealthWarning  HealthStatus = "WARNING"  // minor or warning issues only
	HealthViolated HealthStatus = "VIOLATED" // a critical or major issue
	HealthFailed   HealthStatus = "FAILED"   // no violation, but the thread failed or a step's latest attempt failed
)

// HealthStatuses lists every health status, worst first.
var HealthStatuses = []HealthStatus{HealthViolated, HealthFailed, HealthWarning, HealthOK}

// ParseHealthStatus accepts exactly the four names (upper case, as in the
// GraphQL enum).
func ParseHealthStatus(s string) (HealthStatus, error) {
	switch h := HealthStatus(s); h {
	case HealthOK, HealthWarning, HealthViolated, HealthFailed:
		return h, nil
	}
	return "", Invalid("health", "unknown health %q: must be one of OK, WARNING, VIOLATED, FAILED", s)
}

// IssueStepFailed is the type of a ThreadHealth.FirstIssue that is a failed
// step attempt rather than a validation issue.
const IssueStepFailed = "step_failed"

// HealthIssue is the first thing that went badly wrong on a thread, shown as
// the reason in the thread list and on top of the thread page.
type HealthIssue struct {
	StepName string
	Type     string
	Message  string
	Severity Severity // "" for a failed step
}

// ThreadHealth is a thread's health, kept on the thread row and folded
// forward with every step attempt in the same transaction as the attempt, so
// the list can filter and sort by it without reading steps.
type ThreadHealth struct {
	// FailedSteps counts step identities whose latest attempt failed; a retry
	// that succeeds takes its identity out of the count.
	FailedSteps int
	// Critical, Major and Warnings count validation issues over every
	// attempt; Warnings holds both minor and warning issues. Info never counts.
	Critical, Major, Warnings int
	// FirstIssue is the first critical or major issue, else the first failed
	// attempt; nil when neither happened. A failed attempt is replaced by a
	// later critical or major issue (a violation explains more than an error).
	FirstIssue *HealthIssue
	// LastActivityAt is the latest of the attempts' recorded and finished
	// times (zero before the first attempt).
	LastActivityAt time.Time
}

// StepOutcome is what one recorded attempt contributes to its thread's health.
type StepOutcome struct {
	StepName string
	Status   string
	// PrevStatus is the status of the identity's previous latest attempt ("" when
	// this is its first attempt).
	PrevStatus string
	// Error is the attempt's error text (failed attempts), if any.
	Error      string
	Issues     []ValidationIssue
	RecordedAt time.Time
	FinishedAt *time.Time
}

// Fold returns h with one more attempt applied. It is pure and the only
// place the health rules live: the write path calls it per attempt, and the
// start-up backfill replays old attempts through it.
func (h ThreadHealth) Fold(o StepOutcome) ThreadHealth {
	wasFailed, isFailed := StepFailed(o.PrevStatus), StepFailed(o.Status)
	switch {
	case isFailed && !wasFailed:
		h.FailedSteps++
	case !isFailed && wasFailed && h.FailedSteps > 0:
		h.FailedSteps--
	}
	for _, is := range o.Issues {
		switch is.Severity {
		case SeverityCritical:
			h.Critical++
		case SeverityMajor:
			h.Major++
		case SeverityMinor, SeverityWarning:
			h.Warnings++
		}
		if is.Severity.FailsThread() && (h.FirstIssue == nil || h.FirstIssue.Severity == "") {
			h.FirstIssue = &HealthIssue{StepName: o.StepName, Type: is.Type, Message: is.Message, Severity: is.Severity}
		}
	}
	if isFailed && h.FirstIssue == nil {
		msg := o.Error
		if msg == "" {
			msg = fmt.Sprintf("Step %q %s", o.StepName, o.Status)
		}
		h.FirstIssue = &HealthIssue{StepName: o.StepName, Type: IssueStepFailed, Message: msg}
	}
	at := o.RecordedAt
	if o.FinishedAt != nil && o.FinishedAt.After(at) {
		at = *o.FinishedAt
	}
	if at.After(h.LastActivityAt) {
		h.LastActivityAt = at
	}
	return h
}

// Status is the verdict for a thread in threadStatus: VIOLATED on any
// critical or major issue (such an issue also fails a contract thread, so
// the violation is the better name for it), else FAILED when the thread
// failed or a step is left failed, WARNING on minor or warning issues, OK
// otherwise.
func (h ThreadHealth) Status(threadStatus string) HealthStatus {
	switch {
	case h.Critical+h.Major > 0:
		return HealthViolated
	case threadStatus == "failed" || h.FailedSteps > 0:
		return HealthFailed
	case h.Warnings > 0:
		return HealthWarning
	}
	return HealthOK
}

// Duration is how long the thread ran: to its end when it has ended,
// otherwise to its latest recorded activity (0 before any).
func (h ThreadHealth) Duration(startedAt time.Time, completedAt *time.Time) time.Duration {
	end := h.LastActivityAt
	if completedAt != nil {
		end = *completedAt
	}
	if end.IsZero() || end.Before(startedAt) {
		return 0
	}
	return end.Sub(startedAt)
}

// StepError is a failed attempt's error text: metadata.error (a string, or
// an object as JSON), else metadata.message, which the Node SDK's
// failed("msg") sets; "" for attempts that did not fail.
func StepError(status string, metadata map[string]any) string {
	if !StepFailed(status) {
		return ""
	}
	for _, k := range []string{"error", "message"} {
		switch v := metadata[k].(type) {
		case nil:
		case string:
			if v != "" {
				return v
			}
		default:
			b, _ := json.Marshal(v)
			return string(b)
		}
	}
	return ""
}
