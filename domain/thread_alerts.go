package domain

import "time"

// Overdue is the alert condition of a thread past its contract's
// max_duration: still active, started more than maxDuration before now. It
// returns the issue an alert records, and false when the thread is not
// overdue.
func (t *Thread) Overdue(maxDuration time.Duration, now time.Time) (ValidationIssue, bool) {
	elapsed := now.Sub(t.CreatedAt)
	if t.Status != ThreadActive || maxDuration <= 0 || elapsed <= maxDuration {
		return ValidationIssue{}, false
	}
	return OverdueIssue(elapsed, maxDuration), true
}

// Silent is the alert condition of a thread without an update for
// silentAfter: still active, last updated more than silentAfter before now.
func (t *Thread) Silent(silentAfter time.Duration, now time.Time) (ValidationIssue, bool) {
	silence := now.Sub(t.UpdatedAt)
	if t.Status != ThreadActive || silentAfter <= 0 || silence <= silentAfter {
		return ValidationIssue{}, false
	}
	return SilentIssue(silence, silentAfter), true
}

// RecordAlert folds an alert's issue into the thread's health (a major one
// makes it VIOLATED); the thread stays active and its UpdatedAt is left
// alone, so a silence is not ended by being reported.
func (t *Thread) RecordAlert(issues []ValidationIssue) {
	t.health = t.health.Fold(StepOutcome{StepName: "global", Status: "success", PrevStatus: "success", Issues: issues})
}
