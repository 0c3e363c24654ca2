package domain

import "time"

// MaxTraceSkew bounds how far before its creation a trace thread's start
// may move to its earliest span: span times are the exporter's clock, and a
// wrong clock must not date a thread years back.
const MaxTraceSkew = 24 * time.Hour

// DefaultTraceQuietPeriod is how long after its root span ended, with no
// span arriving, a trace thread ends (otlp.trace_quiet_period).
const DefaultTraceQuietPeriod = 30 * time.Second

// ObserveTrace applies a batch of a trace's spans to the trace's thread: the
// thread started at its earliest span (StartedAt; within MaxTraceSkew of its
// creation, never after it), and a root span that ended marks the trace as
// waiting for its quiet period (TraceQuiet). Arrival is now: the quiet
// period runs from the last span received. CreatedAt, the time the engine
// first saw the thread, does not move: a list paging by it, or an overdue
// alert measuring from it, must not see the thread jump back. A closed
// thread is left as it is.
func (t *Thread) ObserveTrace(firstStart, rootEnd, now time.Time) {
	if t.Status.Closed() {
		return
	}
	if !firstStart.IsZero() && firstStart.Before(t.StartedAt()) {
		if floor := t.CreatedAt.Add(-MaxTraceSkew); firstStart.Before(floor) {
			firstStart = floor
		}
		if firstStart.Before(t.StartedAt()) {
			fs := firstStart
			t.traceStartedAt = &fs
		}
	}
	if !rootEnd.IsZero() && (t.traceRootEndedAt == nil || rootEnd.After(*t.traceRootEndedAt)) {
		re := rootEnd
		t.traceRootEndedAt = &re
	}
	if now.After(t.UpdatedAt) {
		t.UpdatedAt = now
	}
}

// StartedAt is when the thread started: its trace's earliest span when
// that was before the engine saw it (ObserveTrace), else CreatedAt. The
// duration runs from it.
func (t Thread) StartedAt() time.Time {
	if t.traceStartedAt != nil && t.traceStartedAt.Before(t.CreatedAt) {
		return *t.traceStartedAt
	}
	return t.CreatedAt
}

// TraceStartedAt is the trace's start when it is before CreatedAt (nil
// otherwise), as a store writes it.
func (t Thread) TraceStartedAt() *time.Time {
	if t.traceStartedAt != nil && t.traceStartedAt.Before(t.CreatedAt) {
		return t.traceStartedAt
	}
	return nil
}

// RestoreTraceStarted sets what TraceStartedAt reads, as loaded by a store.
func (t *Thread) RestoreTraceStarted(at *time.Time) { t.traceStartedAt = at }

// TraceRootEndedAt is when the trace's root span ended (nil: no root span
// that ended was received, or the thread is not a trace's).
func (t *Thread) TraceRootEndedAt() *time.Time { return t.traceRootEndedAt }

// RestoreTraceRootEnded sets what TraceRootEndedAt reads, as loaded by a
// store (nil when unset).
func (t *Thread) RestoreTraceRootEnded(at *time.Time) { t.traceRootEndedAt = at }

// TraceQuiet reports whether a trace thread is due to end: still active,
// its root span ended, and no span arrived for quiet.
func (t *Thread) TraceQuiet(quiet time.Duration, now time.Time) bool {
	return t.Status == ThreadActive && t.traceRootEndedAt != nil && !t.UpdatedAt.After(now.Add(-quiet))
}

// EndTrace ends a quiet trace thread (TraceQuiet) from what its spans say:
// failed when one failed, naming the deepest failing span and its status
// message (the thread's error, and its first issue unless a contract
// violation explains more); completed otherwise. The thread ends when its
// last span did, not when it was received or the quiet period ran out.
// A contract thread completes only through its terminal step, so one
// without a failure stays active (the silence alert is for those). It
// reports whether the thread changed.
func (t *Thread) EndTrace(spans []SpanNode, quiet time.Duration, now time.Time) bool {
	if !t.TraceQuiet(quiet, now) {
		return false
	}
	var end time.Time // the last span's end (not when it was received)
	for _, s := range spans {
		if s.End.After(end) {
			end = s.End
		}
	}
	if t.traceRootEndedAt != nil && t.traceRootEndedAt.After(end) {
		end = *t.traceRootEndedAt
	}
	if end.IsZero() || end.After(now) || end.Before(t.StartedAt()) {
		end = now
	}
	deepest, failed := DeepestFailure(spans)
	switch {
	case failed:
		t.Status, t.Error = ThreadFailed, TraceFailureReason(deepest)
		if is := t.health.FirstIssue; is == nil || is.Severity == "" {
			msg := deepest.Message
			if msg == "" {
				msg = "Span ended with error status"
			}
			t.health.FirstIssue = &HealthIssue{StepName: deepest.StepName, Type: IssueStepFailed, Message: msg}
		}
	case t.HasContract():
		// Not ended, and no longer watched either (the store writes the
		// thread back): left due, a hundred such threads would fill every
		// quiet-trace batch and no other trace would end. A later root span
		// makes it due again.
		t.traceRootEndedAt = nil
		return false
	default:
		t.Status = ThreadCompleted
	}
	t.CompletedAt, t.UpdatedAt = &end, now
	return true
}
