// Package otlp ingests OpenTelemetry traces (OTLP/HTTP, protobuf or JSON,
// optionally gzip) on POST /v1/traces: a trace becomes a thread, a span a
// step, a span event a sub-step. The whole body is decoded and validated
// before anything is written, so a malformed request writes nothing. The
// write permission is checked before the body is read, and the body is
// decoded within byte, object and concurrency limits (decode.go).
package otlp

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/httperr"
	"github.com/threadengine/engine/adapters/limits"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
)

// Handler serves POST /v1/traces.
type Handler struct {
	Threads *threadsapp.Module
	Log     *slog.Logger
	// Limits bound one request (zero: config.DefaultLimits().OTLP).
	Limits config.OTLPLimits
	// Refusals counts requests refused by a limit (nil: not counted).
	Refusals *limits.Counter

	slotsOnce sync.Once
	slots     chan struct{} // one per request being read and decoded
}

// Mount adds the route behind auth (which puts the principal in the context).
func (h *Handler) Mount(e *echo.Echo, auth echo.MiddlewareFunc) {
	e.POST("/v1/traces", h.export, auth)
}

type span struct {
	traceID, spanID, parentID string
	name                      string
	start, end                time.Time
	attrs                     map[string]string // resource attributes overlaid by span attributes
	own                       map[string]string // the span's own attributes (its step context)
	failed                    bool
	statusMsg                 string
	events                    []threadsapp.SubStepInput
}

type trace struct {
	id    string
	spans []span
}

func (h *Handler) export(c echo.Context) error {
	req := c.Request()
	lim := h.limits()
	asJSON := false
	switch ct := strings.ToLower(strings.TrimSpace(strings.Split(req.Header.Get("Content-Type"), ";")[0])); ct {
	case "application/x-protobuf", "application/protobuf", "":
	case "application/json":
		asJSON = true
	default:
		return h.fail(c, asJSON, domain.E(domain.KindUnsupportedMedia, domain.CodeUnsupportedMediaType,
			"unsupported Content-Type %s: use application/x-protobuf or application/json", ct))
	}
	// Before a byte of the body is read: who may write, and a decoding slot.
	if err := h.Threads.AuthorizeIngest(req.Context()); err != nil {
		return h.fail(c, asJSON, err)
	}
	release, err := h.acquire(req, lim)
	if err != nil {
		return h.fail(c, asJSON, err)
	}
	traces, err := h.decode(req, lim, asJSON)
	release()
	if err != nil {
		return h.fail(c, asJSON, err)
	}
	total := 0
	for _, tr := range traces {
		total += len(tr.spans)
	}
	m := h.Threads.Metrics()
	rejected, firstErr := 0, ""
	for _, tr := range traces {
		n, err := h.ingest(req.Context(), tr)
		if err != nil {
			de := domain.AsError(err)
			if de.Kind == domain.KindUnavailable || de.Kind == domain.KindInternal {
				// Not this trace's fault: the whole request fails (503 is
				// retried by exporters), not a partial success.
				return h.fail(c, asJSON, err, "trace_id", tr.id)
			}
			rejected += n
			if firstErr == "" {
				firstErr = "trace " + tr.id + ": " + de.Message
			}
		}
	}
	m.SpansAccepted(total - rejected)
	m.SpansRejected(rejected)
	return h.reply(c, asJSON, rejected, firstErr)
}

// decode reads, counts and parses the body, and validates every span; the
// body and its parsed form are garbage once the spans are collected.
func (h *Handler) decode(req *http.Request, lim config.OTLPLimits, asJSON bool) ([]*trace, error) {
	body, err := readBody(req, lim)
	if err != nil {
		return nil, err
	}
	defer putBuf(body)        // the parsed form holds copies, never the body itself
	var td tracepb.TracesData // wire-identical to ExportTraceServiceRequest
	if asJSON {
		err = decodeJSON(body, lim, &td)
	} else {
		err = decodeProto(body, lim, &td)
	}
	if err != nil {
		return nil, err
	}
	return collect(&td, lim)
}

func (h *Handler) limits() config.OTLPLimits {
	if h.Limits.MaxConcurrent <= 0 {
		return config.DefaultLimits().OTLP
	}
	return h.Limits
}

// acquire waits (up to QueueTimeout) for one of MaxConcurrent decoding
// slots, so concurrent large requests cannot multiply the memory one takes.
func (h *Handler) acquire(req *http.Request, lim config.OTLPLimits) (func(), error) {
	h.slotsOnce.Do(func() { h.slots = make(chan struct{}, lim.MaxConcurrent) })
	t := time.NewTimer(lim.QueueTimeout)
	defer t.Stop()
	select {
	case h.slots <- struct{}{}:
		return func() { <-h.slots }, nil
	case <-t.C:
		return nil, domain.LimitExceeded(domain.KindRateLimited, string(limits.OTLPConcurrent),
			"%d OTLP requests are being decoded; retry later", lim.MaxConcurrent)
	case <-req.Context().Done():
		return nil, domain.E(domain.KindUnavailable, domain.CodeUnavailable, "the request was cancelled")
	}
}

// fail answers err as google.rpc.Status from its public view: HTTP status
// and gRPC code from the kind, the message starting with the engine's error
// code; limits are counted, an internal error logged once (with attrs).
func (h *Handler) fail(c echo.Context, asJSON bool, err error, attrs ...any) error {
	if errors.Is(err, errReadTimeout) {
		h.Refusals.Refused(limits.HTTPReadTimeout)
		err = domain.LimitExceeded(domain.KindTooLarge, string(limits.HTTPReadTimeout), "the request body was not received in time")
	}
	de := domain.AsError(err)
	if de.Code == domain.CodeLimitExceeded {
		if name, ok := de.Details["limit"].(string); ok && name != string(limits.HTTPReadTimeout) {
			h.Refusals.Refused(limits.Name(name))
		}
	}
	p := httperr.Report(c.Request().Context(), h.log(), err, attrs...)
	httperr.SetHeaders(c.Response().Header(), p)
	return h.status(c, p, asJSON)
}

func (h *Handler) log() *slog.Logger {
	if h.Log != nil {
		return h.Log
	}
	return slog.Default()
}

// collect validates every span and groups them by trace, before any write.
func collect(td *tracepb.TracesData, lim config.OTLPLimits) ([]*trace, error) {
	// Every span copies its resource's attributes: count the copies too.
	copies := 0
	for _, rs := range td.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			copies += len(ss.GetSpans()) * len(rs.GetResource().GetAttributes())
			if copies > lim.MaxObjects {
				return nil, tooLarge(limits.OTLPObjects, "more than %d attributes once resource attributes are applied to each span", lim.MaxObjects)
			}
		}
	}
	byID := map[string]*trace{}
	var order []*trace
	total := 0
	for _, rs := range td.GetResourceSpans() {
		res := attrMap(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				total++
				if total > lim.MaxSpans {
					return nil, tooLarge(limits.OTLPSpans, "more than %d spans in one request", lim.MaxSpans)
				}
				if len(s.GetTraceId()) != 16 || isZero(s.GetTraceId()) {
					return nil, malformed("span %q: traceId must be 16 non-zero bytes", s.GetName())
				}
				if len(s.GetSpanId()) != 8 || isZero(s.GetSpanId()) {
					return nil, malformed("span %q: spanId must be 8 non-zero bytes", s.GetName())
				}
				if p := s.GetParentSpanId(); len(p) != 0 && len(p) != 8 {
					return nil, malformed("span %q: parentSpanId must be 8 bytes", s.GetName())
				}
				if s.GetName() == "" && res["threadify.step_name"] == "" {
					return nil, malformed("span %x: name is required", s.GetSpanId())
				}
				if s.GetEndTimeUnixNano() != 0 && s.GetEndTimeUnixNano() < s.GetStartTimeUnixNano() {
					return nil, malformed("span %q: ends before it starts", s.GetName())
				}
				sp := span{traceID: hex.EncodeToString(s.GetTraceId()), spanID: hex.EncodeToString(s.GetSpanId()),
					parentID: hex.EncodeToString(s.GetParentSpanId()), name: s.GetName(),
					start: nanos(s.GetStartTimeUnixNano()), end: nanos(s.GetEndTimeUnixNano()), attrs: map[string]string{}}
				for k, v := range res {
					sp.attrs[k] = v
				}
				sp.own = attrMap(s.GetAttributes())
				for k, v := range sp.own {
					sp.attrs[k] = v // span wins over resource
				}
				if s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR {
					sp.failed, sp.statusMsg = true, s.GetStatus().GetMessage()
				}
				for _, ev := range s.GetEvents() {
					payload := map[string]any{}
					for k, v := range attrMap(ev.GetAttributes()) {
						payload[k] = v
					}
					name := ev.GetName()
					if name == "" {
						name = "event"
					}
					sp.events = append(sp.events, threadsapp.SubStepInput{Name: name, Status: "success", Payload: payload,
						RecordedAt: nanos(ev.GetTimeUnixNano())})
				}
				tr := byID[sp.traceID]
				if tr == nil {
					tr = &trace{id: sp.traceID}
					byID[sp.traceID] = tr
					order = append(order, tr)
				}
				tr.spans = append(tr.spans, sp)
			}
		}
	}
	for _, tr := range order {
		sort.SliceStable(tr.spans, func(i, j int) bool { return tr.spans[i].start.Before(tr.spans[j].start) })
	}
	return order, nil
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func nanos(n uint64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(n)).UTC()
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		if kv.GetKey() == "" {
			continue
		}
		out[kv.GetKey()] = anyString(kv.GetValue())
	}
	return out
}

func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BytesValue:
		return base64.StdEncoding.EncodeToString(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		parts := make([]string, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, anyString(e))
		}
		b, _ := json.Marshal(parts)
		return string(b)
	case *commonpb.AnyValue_KvlistValue:
		b, _ := json.Marshal(attrMap(x.KvlistValue.GetValues()))
		return string(b)
	}
	return ""
}

// ingest writes one trace; it returns how many spans were rejected.
func (h *Handler) ingest(ctx context.Context, tr *trace) (int, error) {
	threads := h.Threads.Application()
	threadID, err := h.thread(ctx, tr)
	if err != nil {
		return len(tr.spans), err
	}
	for i, sp := range tr.spans {
		name := sp.attrs["threadify.step_name"]
		if name == "" {
			name = sp.name
		}
		seen, err := threads.Queries.HasStep.Handle(ctx, threadID, name, sp.spanID)
		if err != nil {
			return len(tr.spans) - i, err
		}
		if seen {
			continue // the exporter retried a batch we already stored
		}
		// A span acts as the party its threadify.role names (else the key's
		// only party on the thread). The span id is also the invocation id: a
		// batch re-sent to this or another replica is recognised as the same
		// attempt, never a retry.
		in := threadsapp.RecordStepInput{ThreadID: threadID, Role: sp.attrs["threadify.role"], StepName: name, Status: "success", IdempotencyKey: sp.spanID,
			InvocationID: sp.spanID,
			Context:      stepContext(sp.attrs, sp.own), ServiceName: serviceOf(sp.attrs), SubSteps: sp.events,
			Metadata: map[string]any{"otel_trace_id": sp.traceID, "otel_span_id": sp.spanID}}
		if sp.parentID != "" {
			in.Metadata["otel_parent_span_id"] = sp.parentID
		}
		if !sp.start.IsZero() {
			st := sp.start
			in.StartedAt = &st
		}
		if !sp.end.IsZero() {
			en := sp.end
			in.FinishedAt = &en
		}
		if sp.failed {
			in.Status = "failed"
			msg := sp.statusMsg
			if msg == "" {
				msg = "Span ended with error status"
			}
			in.Metadata["error"] = msg
		}
		// Refs ride with the step, in its transaction.
		for k, v := range sp.attrs {
			if rk, ok := strings.CutPrefix(k, "threadify.ref."); ok && rk != "" {
				if in.Refs == nil {
					in.Refs = map[string]string{}
				}
				in.Refs[rk] = v
			}
		}
		if _, err := threads.Commands.RecordStep.Handle(ctx, in); err != nil {
			return len(tr.spans) - i, err
		}
	}
	return 0, nil
}

// thread finds the trace's thread (threadify.thread_id, else the thread of
// threadify.thread_key, else the trace's thread) or starts one; the key
// decides, so replicas ingesting batches of one trace at once agree.
func (h *Handler) thread(ctx context.Context, tr *trace) (string, error) {
	threads := h.Threads.Application()
	var attrs map[string]string
	root := tr.spans[0]
	for _, sp := range tr.spans {
		if sp.parentID == "" {
			root = sp
			break
		}
	}
	attrs = root.attrs
	for _, sp := range tr.spans {
		if id := sp.attrs["threadify.thread_id"]; id != "" {
			return id, nil
		}
	}
	label := attrs["threadify.label"]
	if label == "" {
		label = root.name
	}
	in := threadsapp.StartThreadInput{Contract: attrs["threadify.contract"], Role: attrs["threadify.role"], Label: label,
		ServiceName: serviceOf(attrs), Refs: map[string]string{"otel_trace_id": tr.id, "label": label}}
	if in.Contract != "" && in.Role == "" {
		in.Role = strings.TrimSuffix(in.ServiceName, "-service")
		if in.Role == "" {
			in.Role = "participant"
		}
	}
	if tags := attrs["threadify.tags"]; tags != "" {
		var list []string
		if json.Unmarshal([]byte(tags), &list) != nil {
			for _, t := range strings.Split(tags, ",") {
				if t = strings.TrimSpace(t); t != "" {
					list = append(list, t)
				}
			}
		}
		in.Tags = list
	}
	appKey := ""
	for _, sp := range tr.spans {
		if k := strings.TrimSpace(sp.attrs["threadify.thread_key"]); k != "" {
			appKey = k
			break
		}
	}
	th, _, err := threads.Commands.StartThreadWithKey.HandleTrace(ctx, tr.id, appKey, in)
	if err != nil {
		return "", err
	}
	return th.ID, nil
}

func serviceOf(attrs map[string]string) string {
	if s := attrs["threadify.service"]; s != "" {
		return s
	}
	return attrs["service.name"]
}

// stepContext: threadify.context.<k> (prefix stripped, from resource or
// span) and every other span attribute that is not a threadify.* directive.
// Other resource attributes (service.name, host…) describe the process, not
// the step, and stay out.
func stepContext(attrs, own map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range own {
		if !strings.HasPrefix(k, "threadify.") {
			out[k] = v
		}
	}
	for k, v := range attrs {
		if rest, ok := strings.CutPrefix(k, "threadify.context."); ok && rest != "" {
			out[rest] = v
		}
	}
	return out
}

// reply writes an ExportTraceServiceResponse, with partial success when
// some spans were rejected.
func (h *Handler) reply(c echo.Context, asJSON bool, rejected int, msg string) error {
	if asJSON {
		body := map[string]any{}
		if rejected > 0 {
			body["partialSuccess"] = map[string]any{"rejectedSpans": strconv.Itoa(rejected), "errorMessage": msg}
		}
		return c.JSON(http.StatusOK, body)
	}
	var b []byte
	if rejected > 0 {
		var ps []byte
		ps = protowire.AppendTag(ps, 1, protowire.VarintType)
		ps = protowire.AppendVarint(ps, uint64(rejected))
		ps = protowire.AppendTag(ps, 2, protowire.BytesType)
		ps = protowire.AppendString(ps, msg)
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, ps)
	}
	return c.Blob(http.StatusOK, "application/x-protobuf", b)
}

// status writes p as google.rpc.Status (protobuf) or JSON, as OTLP asks:
// the HTTP status and gRPC code are the kind's (domain's table).
func (h *Handler) status(c echo.Context, p domain.PublicError, asJSON bool) error {
	msg := string(p.Code) + ": " + p.Message
	if asJSON {
		return c.JSON(p.Status, rpcStatus{Code: p.GRPCCode, Message: msg})
	}
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(p.GRPCCode))
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendString(b, msg)
	return c.Blob(p.Status, "application/x-protobuf", b)
}

// rpcStatus is google.rpc.Status in its JSON form.
type rpcStatus struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}
