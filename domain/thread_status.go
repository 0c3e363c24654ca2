package domain

import (
	"strings"
)

// ThreadStatus is where a thread is in its life: active until it completes,
// fails or is cancelled; the three end states are final.
type ThreadStatus string

const (
	ThreadActive    ThreadStatus = "active"
	ThreadCompleted ThreadStatus = "completed"
	ThreadFailed    ThreadStatus = "failed"
	ThreadCancelled ThreadStatus = "cancelled"
)

// Closed reports whether the thread has ended (no more writes).
func (s ThreadStatus) Closed() bool { return s != ThreadActive }

// ParseEndStatus reads the status a caller may end a thread with: completed
// or cancelled ("" means cancelled, as the SDKs' cancel sends none).
func ParseEndStatus(s string) (ThreadStatus, error) {
	switch ThreadStatus(s) {
	case "", ThreadCancelled:
		return ThreadCancelled, nil
	case ThreadCompleted:
		return ThreadCompleted, nil
	}
	return "", Invalid("status", "status must be completed or cancelled, not %q", s)
}

// StepStatus is the outcome an SDK reports for one step attempt. Every word
// the Node (0.1.24), Go and Python (0.4.0) SDKs send is accepted: success(),
// failed(), error(), stop('skipped') and the in_progress a step starts with.
type StepStatus string

const (
	StepStatusSuccess    StepStatus = "success"
	StepStatusFailed     StepStatus = "failed"
	StepStatusError      StepStatus = "error"
	StepStatusSkipped    StepStatus = "skipped"
	StepStatusInProgress StepStatus = "in_progress"
)

// StepStatuses is every accepted step status, in the order errors list them.
var StepStatuses = []StepStatus{StepStatusSuccess, StepStatusFailed, StepStatusError, StepStatusSkipped, StepStatusInProgress}

// SubStepStatuses is every accepted sub-step status: the SDKs send success
// and failed (and check it too); OTLP span events also map to retry and
// event (SpanEvent.EventStatus), which no step status counts as a failure.
var SubStepStatuses = []StepStatus{StepStatusSuccess, StepStatusFailed, SubStepRetry, SubStepEvent}

// ParseStepStatus accepts exactly the statuses SDKs send; anything else is
// refused with invalid_step_status naming the accepted values, rather than
// stored and later reported as a failure.
func ParseStepStatus(s string) (StepStatus, error) {
	return parseStatus("status", s, StepStatuses)
}

// ParseSubStepStatus accepts SubStepStatuses ("" is success, the SDKs'
// default).
func ParseSubStepStatus(s string) (StepStatus, error) {
	if s == "" {
		return StepStatusSuccess, nil
	}
	return parseStatus("subSteps.status", s, SubStepStatuses)
}

func parseStatus(field, s string, accepted []StepStatus) (StepStatus, error) {
	for _, a := range accepted {
		if string(a) == s {
			return a, nil
		}
	}
	words := make([]string, len(accepted))
	for i, a := range accepted {
		words[i] = string(a)
	}
	e := E(KindInvalid, CodeInvalidStepStatus, "invalid step status %q: accepted values are %s", s, strings.Join(words, ", "))
	e.Field = field
	return "", e.WithDetail("accepted", words)
}

// Succeeded reports whether the attempt counts as success.
func (s StepStatus) Succeeded() bool { return StepSucceeded(string(s)) }

// Failed reports whether the attempt is a failure (failed or error).
func (s StepStatus) Failed() bool { return StepFailed(string(s)) }
