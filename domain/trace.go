package domain

import (
	"sort"
	"strings"
	"time"
)

// Span is one OpenTelemetry span as a transport decoded it: a trace becomes
// a thread, a span a step, a span event a sub-step. Attributes are strings
// (arrays and maps as JSON); Resource is shared by the spans of one
// resource (never copied per span).
type Span struct {
	TraceID, SpanID, ParentID string // hex; ParentID "" for a root span
	Name                      string
	Start, End                time.Time // zero when the exporter sent none
	Resource                  map[string]string
	Attributes                map[string]string // the span's own
	Failed                    bool              // status code ERROR
	StatusMessage             string
	Events                    []SpanEvent
}

// SpanEvent is a span's event.
type SpanEvent struct {
	Name       string
	Time       time.Time
	Attributes map[string]string
}

// Attr is the span's attribute k, else its resource's (a span attribute
// wins over the resource's).
func (s *Span) Attr(k string) string {
	if v, ok := s.Attributes[k]; ok {
		return v
	}
	return s.Resource[k]
}

// IsRoot reports whether the span has no parent.
func (s *Span) IsRoot() bool { return s.ParentID == "" }

// StepName is the step the span records: threadify.step_name, else its name.
func (s *Span) StepName() string {
	if n := s.Attr("threadify.step_name"); n != "" {
		return n
	}
	return s.Name
}

// ServiceName is threadify.service, else the resource's service.name.
func (s *Span) ServiceName() string {
	if v := s.Attr("threadify.service"); v != "" {
		return v
	}
	return s.Attr("service.name")
}

// StepContext is what the span's step records as its context:
// threadify.context.<k> (prefix stripped, from resource or span) and every
// other span attribute that is not a threadify.* directive. Other resource
// attributes (service.name, host…) describe the process, not the step.
func (s *Span) StepContext() map[string]string {
	out := map[string]string{}
	for k, v := range s.Attributes {
		if !strings.HasPrefix(k, "threadify.") {
			out[k] = v
		}
	}
	for _, m := range []map[string]string{s.Resource, s.Attributes} { // span wins
		for k, v := range m {
			if rest, ok := strings.CutPrefix(k, "threadify.context."); ok && rest != "" {
				out[rest] = v
			}
		}
	}
	return out
}

// Refs are the thread refs the span carries (threadify.ref.<k>).
func (s *Span) Refs() map[string]string {
	var out map[string]string
	for _, m := range []map[string]string{s.Resource, s.Attributes} { // span wins
		for k, v := range m {
			if rk, ok := strings.CutPrefix(k, "threadify.ref."); ok && rk != "" {
				if out == nil {
					out = map[string]string{}
				}
				out[rk] = v
			}
		}
	}
	return out
}

// Validate checks what a span must have before anything of its request is
// written.
func (s *Span) Validate() error {
	if s.StepName() == "" {
		return Invalid("", "span %s: name is required", s.SpanID)
	}
	if !s.End.IsZero() && s.End.Before(s.Start) {
		return Invalid("", "span %q: ends before it starts", s.Name)
	}
	return nil
}

// Sub-step statuses a span event maps to besides success and failed: a
// retry, and a plain event that is neither a success nor a failure.
const (
	SubStepRetry StepStatus = "retry"
	SubStepEvent StepStatus = "event"
)

// EventStatus is what a span event means as a sub-step: an exception failed,
// a retry is a retry (its span's earlier attempt failed), an event marked
// with threadify.status says so, and anything else is an annotation, not a
// success.
func (e SpanEvent) EventStatus() StepStatus {
	if st, err := ParseSubStepStatus(e.Attributes["threadify.status"]); err == nil && e.Attributes["threadify.status"] != "" {
		return st
	}
	name := strings.ToLower(e.Name)
	switch {
	case name == "exception" || strings.HasSuffix(name, ".error") || strings.HasSuffix(name, ".failed"):
		return StepStatusFailed
	case name == "retry" || strings.HasPrefix(name, "retry") || strings.HasSuffix(name, ".retry") || strings.HasSuffix(name, "_retry"):
		return SubStepRetry
	}
	return SubStepEvent
}

// DefaultTraceRole is the party a trace's spans act as on a contract thread
// when no span names one (threadify.role): the service name without its
// "-service" suffix ("checkout-service" acts as "checkout"), else
// "participant".
func DefaultTraceRole(serviceName string) string {
	if r := strings.TrimSuffix(serviceName, "-service"); r != "" {
		return r
	}
	return "participant"
}

// SpanNode is a recorded span as the trace's end reads it back from its
// steps: enough to find the deepest failing one.
type SpanNode struct {
	SpanID, ParentID string
	StepName         string
	Failed           bool
	Message          string
	End              time.Time
}

// DeepestFailure is the failing span deepest in the trace's tree (the one
// that explains the failure, as Jaeger shows it: a provider's HTTP 429
// rather than the request span that failed because of it); ties go to the
// one that ended first. ok is false when no span failed. A span whose
// parent was never received counts from where its chain stops.
func DeepestFailure(spans []SpanNode) (SpanNode, bool) {
	parent := make(map[string]string, len(spans))
	for _, s := range spans {
		parent[s.SpanID] = s.ParentID
	}
	depth := func(id string) int {
		d := 0
		for seen := 0; seen <= len(spans); seen++ { // a cycle cannot loop forever
			p, ok := parent[id]
			if !ok || p == "" {
				return d
			}
			d, id = d+1, p
		}
		return d
	}
	var best SpanNode
	bestDepth, found := -1, false
	for _, s := range spans {
		if !s.Failed {
			continue
		}
		d := depth(s.SpanID)
		if d > bestDepth || d == bestDepth && s.End.Before(best.End) {
			best, bestDepth, found = s, d, true
		}
	}
	return best, found
}

// TraceFailureReason is what a failed trace thread says failed: the deepest
// failing span and its status message.
func TraceFailureReason(s SpanNode) string {
	msg := s.Message
	if msg == "" {
		msg = "ended with error status"
	}
	return "span " + quote(s.StepName) + " failed: " + msg
}

func quote(s string) string { return "\"" + s + "\"" }

// SortSpans orders a trace's spans by start time (stable: the exporter's
// order breaks ties), the order their steps are recorded in.
func SortSpans(spans []Span) {
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].Start.Before(spans[j].Start) })
}
