package wsapi

import (
	"context"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/threadengine/engine/adapters/tracing"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// actionUnknown labels frames whose action the protocol does not know, and
// frames that could not be decoded, so the action label stays bounded.
const actionUnknown = "unknown"

// ActionNames are the labels frames are counted under: every action of the
// protocol, connect, and unknown.
func ActionNames() []string {
	out := []string{"connect", actionUnknown}
	for a := range actions {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// spanNames are the frames' span names by action label ("ws <action>").
var spanNames = func() map[string]string {
	out := map[string]string{}
	for _, a := range ActionNames() {
		out[a] = "ws " + a
	}
	return out
}()

var serverKind = trace.WithSpanKind(trace.SpanKindServer)

func actionLabel(a string) string {
	if _, ok := actions[a]; ok || a == "connect" {
		return a
	}
	return actionUnknown
}

// useCases name the use case each action calls, for its span (the
// adapter opens it, so app stays free of tracing; see
// docs/operators/tracing.md).
var useCases = map[string]string{
	"connect":           "identity.AuthenticateAPIKey",
	"startThread":       "threads.StartThread",
	"thread":            "threads.StartThreadWithKey",
	"recordThreadEvent": "threads.RecordStep",
	"addRefs":           "threads.AddRefs",
	"linkThread":        "threads.AddRefs",
	"inviteParty":       "threads.InviteParty",
	"joinThread":        "threads.JoinThread",
	"threadEnd":         "threads.EndThread",
	"closeThread":       "threads.EndThread",
}

func useCaseOf(m Message) string {
	if m.Action != "waitFor" {
		return useCases[m.Action]
	}
	switch {
	case m.Str("cancel") == "true":
		return "waits.CancelGrant"
	case m.Str("stepId") != "":
		return "waits.WaitForValidation"
	}
	return "waits.WaitForPermission"
}

// frame is one frame being handled: when it began, its spans and, once it
// ends, its count in threadengine_websocket_actions_*.
type frame struct {
	metrics ports.SessionMetrics
	action  string
	start   time.Time
	span    trace.Span // "ws <action>", the frame
	call    trace.Span // the use case the action calls (nil when none)
	once    sync.Once
}

type frameKey struct{}

// beginFrame starts m's spans, continuing the trace the frame names: its
// traceparent field (a W3C value) or, from the Threadify SDKs' span
// exporters, the otel_trace_id and otel_span_id refs of the span it
// records.
func (s *session) beginFrame(m Message, start time.Time) (context.Context, *frame) {
	f := &frame{metrics: s.h.metrics(), action: actionLabel(m.Action), start: start}
	ctx := s.ctx
	if tp := m.Str("traceparent"); tp != "" {
		ctx = tracing.WithParent(ctx, tp)
	} else if m.Action == "recordThreadEvent" || m.Action == "addRefs" { // the frames the span exporters send
		if refs, ok := m.StrMap("refs"); ok && refs["otel_trace_id"] != "" {
			ctx = tracing.WithParentIDs(ctx, refs["otel_trace_id"], refs["otel_span_id"])
		}
	}
	ctx, f.span = s.h.tracer().Start(ctx, spanNames[f.action], serverKind)
	if f.span.IsRecording() { // attributes only for spans that are kept
		f.span.SetAttributes(tracing.AttrAction.String(f.action))
		if id := m.Str("threadId"); id != "" {
			f.span.SetAttributes(tracing.AttrThreadID.String(id))
		}
		if name := m.Str("stepName"); name != "" {
			f.span.SetAttributes(tracing.AttrStepName.String(name))
		}
	}
	if uc := useCaseOf(m); uc != "" {
		ctx, f.call = s.h.tracer().Start(ctx, uc)
	}
	return context.WithValue(ctx, frameKey{}, f), f
}

// frameOf is the frame ctx was handled in (nil outside one).
func frameOf(ctx context.Context) *frame {
	f, _ := ctx.Value(frameKey{}).(*frame)
	return f
}

// end counts the frame with err's code (none when err is nil) and ends its
// spans; only the first call counts.
func (f *frame) end(err error) {
	if f == nil {
		return
	}
	f.once.Do(func() {
		code := ""
		if err != nil {
			code = string(domain.Public(err).Code)
		}
		f.metrics.ActionHandled(f.action, code, time.Since(f.start))
		if f.call != nil {
			tracing.End(f.call, code, err)
		}
		tracing.End(f.span, code, err)
	})
}

// refused counts a frame refused before it could be decoded.
func (s *session) refused(code string, start time.Time) {
	s.h.metrics().ActionHandled(actionUnknown, code, time.Since(start))
}

// pushed observes a notification push: its delivery lag on its first push,
// and a span in the trace of the step that made it (the traceparent the
// notification carries from the step's commit).
func (s *session) pushed(n ports.NotificationRecord, queued bool) {
	if queued && n.Deliveries <= 1 {
		s.h.metrics().DeliveryLag(s.h.clock().Now().Sub(n.CreatedAt))
	}
	if n.TraceParent == "" {
		return
	}
	ctx := tracing.WithParent(context.Background(), n.TraceParent)
	_, span := s.h.tracer().Start(ctx, "notification push", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(tracing.AttrNotificationID.String(n.ID), tracing.AttrNotification.String(n.NotificationType),
			tracing.AttrThreadID.String(n.ThreadID), tracing.AttrStepName.String(n.StepName),
			tracing.AttrDeliveries.Int(n.Deliveries), attribute.Bool("threadengine.notification.queued", queued)))
	span.End()
}

func (h *Handler) tracer() trace.Tracer {
	h.tracerOnce.Do(func() { h.tracerV = tracing.Tracer(h.Tracer, "wsapi") })
	return h.tracerV
}

func (h *Handler) clock() ports.Clock {
	if h.Clock == nil {
		return ports.SystemClock{}
	}
	return h.Clock
}
