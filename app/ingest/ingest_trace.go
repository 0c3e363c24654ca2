package ingest

// The IngestTrace command: an OpenTelemetry trace becomes a thread, each of
// its spans a step, each span event a sub-step (OTLP). The transport only
// decodes spans (domain.Span) and encodes the answer.

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Trace is the spans of one trace in one request.
type Trace struct {
	ID    string // hex trace id
	Spans []domain.Span
}

// IngestResult is what ingesting a request's traces did.
type IngestResult struct {
	Accepted, Rejected int
	// FirstError explains the first rejected trace ("" when none was).
	FirstError string
}

// TraceStarter finds or starts a trace's thread
// (threads.StartThreadWithKeyHandler).
type TraceStarter interface {
	HandleTrace(ctx context.Context, traceID, appKey string, in threads.StartThreadInput) (domain.Thread, bool, error)
}

// StepSeen reports whether a span was recorded already (threads.HasStepHandler).
type StepSeen interface {
	Handle(ctx context.Context, threadID, stepName, key string) (bool, error)
}

// StepRecorder records a span as a step, judged as every transport's steps
// are (threads.RecordStepHandler).
type StepRecorder interface {
	Handle(ctx context.Context, in threads.RecordStepInput) (threads.StepResult, error)
}

// IngestTraceHandler records traces.
type IngestTraceHandler struct {
	start   TraceStarter
	has     StepSeen
	record  StepRecorder
	threads ports.ThreadUpdater
	clock   ports.Clock
	metrics ports.SpanMetrics
}

// NewIngestTraceHandler builds IngestTrace from the use cases it runs per
// span and the thread updater that moves a trace thread's times.
func NewIngestTraceHandler(start TraceStarter, has StepSeen, record StepRecorder,
	threads ports.ThreadUpdater, clock ports.Clock, metrics ports.SpanMetrics) IngestTraceHandler {
	if metrics == nil {
		metrics = ports.NopMetrics{}
	}
	return IngestTraceHandler{start: start, has: has, record: record, threads: threads, clock: clock, metrics: metrics}
}

// FromThreads builds IngestTrace on the thread use cases of app (built
// after the module's last Set* call: the handlers are values).
func FromThreads(app threads.Application, store ports.ThreadUpdater, clock ports.Clock, metrics ports.SpanMetrics) IngestTraceHandler {
	return NewIngestTraceHandler(app.Commands.StartThreadWithKey, app.Queries.HasStep, app.Commands.RecordStep, store, clock, metrics)
}

// Authorize refuses a caller that may not write threads, before a
// transport reads a request body, and returns who it is (whose share of
// ingest the body is charged to); every span's write checks the same again.
func Authorize(ctx context.Context) (domain.Principal, error) {
	return authz.Require(ctx, domain.PermThreadsWrite)
}

// ValidateTraces checks every span and orders each trace's spans by start
// time, before anything is written: a request with one bad span writes
// nothing.
func ValidateTraces(traces []Trace) error {
	for i := range traces {
		for j := range traces[i].Spans {
			if err := traces[i].Spans[j].Validate(); err != nil {
				return err
			}
		}
		domain.SortSpans(traces[i].Spans)
	}
	return nil
}

// Handle validates every trace, then writes each. A trace refused for its
// own reasons (a rule, a closed thread) is counted as rejected and the
// others are written; an error that is not the trace's fault (the store is
// unavailable, an internal error) fails the whole request, which exporters
// retry.
func (h IngestTraceHandler) Handle(ctx context.Context, traces []Trace) (IngestResult, error) {
	if err := ValidateTraces(traces); err != nil {
		return IngestResult{}, err
	}
	var res IngestResult
	for _, tr := range traces {
		n, err := h.ingest(ctx, tr)
		res.Accepted += len(tr.Spans) - n
		res.Rejected += n
		if err != nil {
			de := domain.AsError(err)
			if de.Kind == domain.KindUnavailable || de.Kind == domain.KindInternal {
				return res, err
			}
			if res.FirstError == "" {
				res.FirstError = "trace " + tr.ID + ": " + de.Message
			}
		}
	}
	h.metrics.SpansAccepted(res.Accepted)
	h.metrics.SpansRejected(res.Rejected)
	return res, nil
}

// ingest writes one trace; it returns how many spans were rejected.
func (h IngestTraceHandler) ingest(ctx context.Context, tr Trace) (int, error) {
	if len(tr.Spans) == 0 {
		return 0, nil
	}
	th, err := h.thread(ctx, tr)
	if err != nil {
		return len(tr.Spans), err
	}
	for i := range tr.Spans {
		sp := &tr.Spans[i]
		seen, err := h.has.Handle(ctx, th.ID, sp.StepName(), sp.SpanID)
		if err != nil {
			return len(tr.Spans) - i, err
		}
		if seen {
			continue // the exporter retried a batch we already stored
		}
		if _, err := h.record.Handle(ctx, spanStep(th.ID, sp)); err != nil {
			return len(tr.Spans) - i, err
		}
	}
	// A trace's own thread takes its times from the spans (not from the
	// ingest), and a root span that ended starts the quiet period after
	// which it ends. A thread the spans only join (threadify.thread_id or
	// thread_key: an SDK's thread) is ended by its writer, not by them.
	if !tr.joinsThread() {
		if err := h.observe(ctx, th, tr.Spans); err != nil {
			return 0, err
		}
	}
	return 0, nil
}

// joinsThread reports whether a span names the thread to write to.
func (tr Trace) joinsThread() bool {
	for i := range tr.Spans {
		if tr.Spans[i].Attr("threadify.thread_id") != "" || strings.TrimSpace(tr.Spans[i].Attr("threadify.thread_key")) != "" {
			return true
		}
	}
	return false
}

// observe moves the thread's start (StartedAt; CreatedAt never moves) to its
// earliest span and marks its root span ended (domain.Thread.ObserveTrace).
// Nothing is written when neither moves (the appends updated the thread).
func (h IngestTraceHandler) observe(ctx context.Context, th domain.Thread, spans []domain.Span) error {
	var first time.Time
	var rootEnd time.Time
	for i := range spans {
		sp := &spans[i]
		if !sp.Start.IsZero() && (first.IsZero() || sp.Start.Before(first)) {
			first = sp.Start
		}
		if sp.IsRoot() && !sp.End.IsZero() && sp.End.After(rootEnd) {
			rootEnd = sp.End
		}
	}
	if rootEnd.IsZero() && (first.IsZero() || !first.Before(th.StartedAt())) {
		return nil
	}
	_, err := h.threads.UpdateThread(ctx, th.ID, func(th *domain.Thread) (ports.ThreadEffects, error) {
		th.ObserveTrace(first, rootEnd, now(h.clock))
		return ports.ThreadEffects{}, nil
	})
	if err != nil && domain.KindOf(err) == domain.KindConflict {
		return nil // ended meanwhile: nothing to move
	}
	return err
}

// spanStep is the step attempt a span records. A span acts as the party its
// threadify.role names (else the key's only party on the thread). The span
// id is also the invocation id: a batch re-sent to this or another replica
// is recognised as the same attempt, never a retry.
func spanStep(threadID string, sp *domain.Span) threads.RecordStepInput {
	in := threads.RecordStepInput{ThreadID: threadID, Role: sp.Attr("threadify.role"), StepName: sp.StepName(), Status: string(domain.StepStatusSuccess),
		IdempotencyKey: sp.SpanID, InvocationID: sp.SpanID, Context: sp.StepContext(), ServiceName: sp.ServiceName(),
		Metadata: map[string]any{"otel_trace_id": sp.TraceID, "otel_span_id": sp.SpanID}, Refs: sp.Refs()}
	if sp.ParentID != "" {
		in.Metadata["otel_parent_span_id"] = sp.ParentID
	}
	if !sp.Start.IsZero() {
		st := sp.Start
		in.StartedAt = &st
	}
	if !sp.End.IsZero() {
		en := sp.End
		in.FinishedAt = &en
	}
	if sp.Failed {
		in.Status = string(domain.StepStatusFailed)
		msg := sp.StatusMessage
		if msg == "" {
			msg = "Span ended with error status"
		}
		in.Metadata["error"] = msg
	}
	for _, ev := range sp.Events {
		payload := make(map[string]any, len(ev.Attributes))
		for k, v := range ev.Attributes {
			payload[k] = v
		}
		name := ev.Name
		if name == "" {
			name = "event"
		}
		in.SubSteps = append(in.SubSteps, threads.SubStepInput{Name: name, Status: string(ev.EventStatus()), Payload: payload, RecordedAt: ev.Time})
	}
	return in
}

// thread finds the trace's thread (threadify.thread_id, else the thread of
// threadify.thread_key, else the trace's thread) or starts one from its
// root span (else its first); the key decides, so replicas ingesting
// batches of one trace at once agree.
func (h IngestTraceHandler) thread(ctx context.Context, tr Trace) (domain.Thread, error) {
	for i := range tr.Spans {
		if id := tr.Spans[i].Attr("threadify.thread_id"); id != "" {
			return domain.Thread{ID: id}, nil
		}
	}
	root := &tr.Spans[0]
	for i := range tr.Spans {
		if tr.Spans[i].IsRoot() {
			root = &tr.Spans[i]
			break
		}
	}
	label := root.Attr("threadify.label")
	if label == "" {
		label = root.Name
	}
	in := threads.StartThreadInput{Contract: root.Attr("threadify.contract"), Role: root.Attr("threadify.role"), Label: label,
		ServiceName: root.ServiceName(), Refs: map[string]string{"otel_trace_id": tr.ID, "label": label}}
	if in.Contract != "" && in.Role == "" {
		in.Role = domain.DefaultTraceRole(in.ServiceName)
	}
	if tags := root.Attr("threadify.tags"); tags != "" {
		in.Tags = parseTags(tags)
	}
	appKey := ""
	for i := range tr.Spans {
		if k := strings.TrimSpace(tr.Spans[i].Attr("threadify.thread_key")); k != "" {
			appKey = k
			break
		}
	}
	th, _, err := h.start.HandleTrace(ctx, tr.ID, appKey, in)
	return th, err
}

// parseTags reads threadify.tags: a JSON array, else a comma-separated list.
func parseTags(tags string) []string {
	var list []string
	if json.Unmarshal([]byte(tags), &list) == nil {
		return list
	}
	list = nil
	for _, t := range strings.Split(tags, ",") {
		if t = strings.TrimSpace(t); t != "" {
			list = append(list, t)
		}
	}
	return list
}
