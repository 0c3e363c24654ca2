// Package otlp ingests OpenTelemetry traces (OTLP/HTTP, protobuf or JSON,
// optionally gzip) on POST /v1/traces: a trace becomes a thread, a span a
// step, a span event a sub-step. The whole body is decoded and validated
// before anything is written, so a malformed request writes nothing.
package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
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
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/threadengine/engine/app"
	"github.com/threadengine/engine/domain"
)

// Limits on one request.
const (
	MaxBodyBytes    = 8 << 20  // compressed or not, as received
	MaxDecodedBytes = 32 << 20 // after gunzip
	MaxSpans        = 10000
)

// Handler serves POST /v1/traces.
type Handler struct {
	Threads *app.Threads
	Log     *slog.Logger

	// locks serialise writers of one trace (striped by trace id) so two
	// batches of a new trace cannot both start a thread for it.
	locks [64]sync.Mutex
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
	events                    []app.SubStepInput
}

type trace struct {
	id    string
	spans []span
}

func (h *Handler) export(c echo.Context) error {
	req := c.Request()
	asJSON := false
	switch ct := strings.ToLower(strings.TrimSpace(strings.Split(req.Header.Get("Content-Type"), ";")[0])); ct {
	case "application/x-protobuf", "application/protobuf", "":
	case "application/json":
		asJSON = true
	default:
		return h.status(c, http.StatusUnsupportedMediaType, asJSON, "unsupported Content-Type "+ct+": use application/x-protobuf or application/json")
	}
	body, err := readBody(req)
	if err != nil {
		return h.status(c, http.StatusBadRequest, asJSON, err.Error())
	}
	var td tracepb.TracesData // wire-identical to ExportTraceServiceRequest
	if asJSON {
		body, err = hexIDsToBase64(body)
		if err == nil {
			err = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(body, &td)
		}
	} else {
		err = proto.Unmarshal(body, &td)
	}
	if err != nil {
		return h.status(c, http.StatusBadRequest, asJSON, "malformed OTLP body: "+err.Error())
	}
	traces, err := collect(&td)
	if err != nil {
		return h.status(c, http.StatusBadRequest, asJSON, err.Error())
	}
	if _, err := app.Require(req.Context(), domain.PermThreadsWrite); err != nil {
		return h.status(c, http.StatusForbidden, asJSON, domain.AsError(err).Message)
	}
	rejected, firstErr := 0, ""
	for _, tr := range traces {
		n, err := h.ingest(req.Context(), tr)
		if err != nil {
			de := domain.AsError(err)
			if de.Kind == domain.KindUnavailable || de.Kind == domain.KindInternal {
				h.log().Error("otlp: ingest", "err", err, "trace_id", tr.id)
				return h.status(c, http.StatusServiceUnavailable, asJSON, "temporarily unavailable; retry")
			}
			rejected += n
			if firstErr == "" {
				firstErr = "trace " + tr.id + ": " + de.Message
			}
		}
	}
	return h.reply(c, asJSON, rejected, firstErr)
}

func (h *Handler) log() *slog.Logger {
	if h.Log != nil {
		return h.Log
	}
	return slog.Default()
}

func readBody(r *http.Request) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading body: %v", err)
	}
	if len(raw) > MaxBodyBytes {
		return nil, fmt.Errorf("body larger than %d bytes", MaxBodyBytes)
	}
	switch enc := strings.ToLower(r.Header.Get("Content-Encoding")); enc {
	case "", "identity":
		return raw, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("malformed gzip body: %v", err)
		}
		out, err := io.ReadAll(io.LimitReader(zr, MaxDecodedBytes+1))
		if err != nil {
			return nil, fmt.Errorf("malformed gzip body: %v", err)
		}
		if len(out) > MaxDecodedBytes {
			return nil, fmt.Errorf("decompressed body larger than %d bytes", MaxDecodedBytes)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("unsupported Content-Encoding %q", enc)
	}
}

// hexIDsToBase64 rewrites OTLP/JSON's hex traceId/spanId/parentSpanId into
// the base64 protojson expects for bytes fields.
func hexIDsToBase64(body []byte) ([]byte, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var walk func(any) error
	walk = func(x any) error {
		switch t := x.(type) {
		case map[string]any:
			for k, val := range t {
				switch k {
				case "traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id":
					s, ok := val.(string)
					if !ok {
						return fmt.Errorf("%s must be a hex string", k)
					}
					b, err := hex.DecodeString(s)
					if err != nil {
						return fmt.Errorf("%s %q is not hex", k, s)
					}
					t[k] = base64.StdEncoding.EncodeToString(b)
				default:
					if err := walk(val); err != nil {
						return err
					}
				}
			}
		case []any:
			for _, e := range t {
				if err := walk(e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// collect validates every span and groups them by trace, before any write.
func collect(td *tracepb.TracesData) ([]*trace, error) {
	byID := map[string]*trace{}
	var order []*trace
	total := 0
	for _, rs := range td.GetResourceSpans() {
		res := attrMap(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				total++
				if total > MaxSpans {
					return nil, fmt.Errorf("more than %d spans in one request", MaxSpans)
				}
				if len(s.GetTraceId()) != 16 || isZero(s.GetTraceId()) {
					return nil, fmt.Errorf("span %q: traceId must be 16 non-zero bytes", s.GetName())
				}
				if len(s.GetSpanId()) != 8 || isZero(s.GetSpanId()) {
					return nil, fmt.Errorf("span %q: spanId must be 8 non-zero bytes", s.GetName())
				}
				if p := s.GetParentSpanId(); len(p) != 0 && len(p) != 8 {
					return nil, fmt.Errorf("span %q: parentSpanId must be 8 bytes", s.GetName())
				}
				if s.GetName() == "" && res["threadify.step_name"] == "" {
					return nil, fmt.Errorf("span %x: name is required", s.GetSpanId())
				}
				if s.GetEndTimeUnixNano() != 0 && s.GetEndTimeUnixNano() < s.GetStartTimeUnixNano() {
					return nil, fmt.Errorf("span %q: ends before it starts", s.GetName())
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
					sp.events = append(sp.events, app.SubStepInput{Name: name, Status: "success", Payload: payload,
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
	stripe := 0
	for _, c := range []byte(tr.id) {
		stripe = (stripe*31 + int(c)) % len(h.locks)
	}
	h.locks[stripe].Lock()
	defer h.locks[stripe].Unlock()

	threadID, err := h.thread(ctx, tr)
	if err != nil {
		return len(tr.spans), err
	}
	for i, sp := range tr.spans {
		name := sp.attrs["threadify.step_name"]
		if name == "" {
			name = sp.name
		}
		seen, err := h.Threads.HasStep(ctx, threadID, name, sp.spanID)
		if err != nil {
			return len(tr.spans) - i, err
		}
		if seen {
			continue // the exporter retried a batch we already stored
		}
		in := app.RecordStepInput{ThreadID: threadID, StepName: name, Status: "success", IdempotencyKey: sp.spanID,
			Context: stepContext(sp.attrs, sp.own), ServiceName: serviceOf(sp.attrs), SubSteps: sp.events,
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
		if _, err := h.Threads.RecordStep(ctx, in); err != nil {
			return len(tr.spans) - i, err
		}
		refs := map[string]string{}
		for k, v := range sp.attrs {
			if rk, ok := strings.CutPrefix(k, "threadify.ref."); ok && rk != "" {
				refs[rk] = v
			}
		}
		if len(refs) > 0 {
			if err := h.Threads.AddRefs(ctx, threadID, refs); err != nil {
				return 0, err
			}
		}
	}
	return 0, nil
}

// thread finds the trace's thread (threadify.thread_id, else the ref
// otel_trace_id) or starts one.
func (h *Handler) thread(ctx context.Context, tr *trace) (string, error) {
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
	id, err := h.Threads.FindThreadByRef(ctx, "otel_trace_id", tr.id)
	if err == nil {
		return id, nil
	}
	if domain.KindOf(err) != domain.KindNotFound {
		return "", err
	}
	label := attrs["threadify.label"]
	if label == "" {
		label = root.name
	}
	in := app.StartThreadInput{Contract: attrs["threadify.contract"], Role: attrs["threadify.role"], Label: label,
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
	th, err := h.Threads.StartThread(ctx, in)
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

// status writes an error as google.rpc.Status (protobuf) or JSON, as OTLP asks.
func (h *Handler) status(c echo.Context, code int, asJSON bool, msg string) error {
	if asJSON {
		return c.JSON(code, map[string]any{"code": grpcCode(code), "message": msg})
	}
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(grpcCode(code)))
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendString(b, msg)
	return c.Blob(code, "application/x-protobuf", b)
}

func grpcCode(httpStatus int) int {
	switch httpStatus {
	case http.StatusBadRequest, http.StatusUnsupportedMediaType:
		return 3 // INVALID_ARGUMENT
	case http.StatusUnauthorized:
		return 16
	case http.StatusForbidden:
		return 7
	case http.StatusServiceUnavailable:
		return 14
	}
	return 2
}
