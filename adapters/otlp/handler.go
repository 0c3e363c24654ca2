// Package otlp ingests OpenTelemetry traces (OTLP/HTTP, protobuf or JSON,
// optionally gzip) on POST /v1/traces. It decodes and encodes only: the
// OpenTelemetry Collector's pdata unmarshals the body (after decode.go has
// bounded its bytes and counted its objects), spans.go turns it into
// domain.Span, and the IngestTrace use case (app/ingest) makes a trace a
// thread, a span a step, a span event a sub-step. The whole body is decoded
// and validated before anything is written, so a malformed request writes
// nothing. The write permission is checked before the body is read, and a
// request holds one of max_concurrent slots from before its body is read
// until its spans are written, so the memory of concurrent requests is
// bounded end to end.
package otlp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/httperr"
	"github.com/threadengine/engine/adapters/limits"
	"github.com/threadengine/engine/app/budget"
	"github.com/threadengine/engine/app/ingest"
	"github.com/threadengine/engine/domain"
)

// Ingester is the IngestTrace use case (ingest.IngestTraceHandler).
type Ingester interface {
	Handle(ctx context.Context, traces []ingest.Trace) (ingest.IngestResult, error)
}

// Handler serves POST /v1/traces.
type Handler struct {
	// Ingest writes the decoded traces (app/ingest's IngestTrace).
	Ingest Ingester
	Log    *slog.Logger
	// Limits bound one request (zero: config.DefaultLimits().OTLP).
	Limits config.OTLPLimits
	// Refusals counts requests refused by a limit (nil: not counted).
	Refusals *limits.Counter

	slotsOnce sync.Once
	slots     chan struct{} // one per request being read, decoded or written
	waiting   atomic.Int64  // requests waiting for a slot
	// shares are the principals' byte rates (limits.otlp.bytes_per_second).
	shares *budget.Buckets
}

// Mount adds the route behind auth (which puts the principal in the context).
func (h *Handler) Mount(e *echo.Echo, auth echo.MiddlewareFunc) {
	e.POST("/v1/traces", h.export, auth)
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
	// Before a byte of the body is read: who may write, whether its share
	// of ingest is spent, and a decoding slot.
	p, err := ingest.Authorize(req.Context())
	if err != nil {
		return h.fail(c, asJSON, err)
	}
	who := p.Key()
	if err := h.share(lim, who); err != nil {
		return h.fail(c, asJSON, err)
	}
	release, err := h.acquire(req, lim)
	if err != nil {
		return h.fail(c, asJSON, err)
	}
	// Asked again with the slot: while this request waited for it, the
	// principal's other requests may have spent its share.
	if err := h.share(lim, who); err != nil {
		release()
		return h.fail(c, asJSON, err)
	}
	// The slot is held through the write: the decoded spans and the rows
	// being written are what a request costs after its body is gone.
	defer release()
	traces, err := h.decode(req, lim, asJSON, who)
	if err != nil {
		return h.fail(c, asJSON, err)
	}
	if len(traces) == 0 {
		return h.reply(c, asJSON, 0, "")
	}
	res, err := h.Ingest.Handle(req.Context(), traces)
	if err != nil {
		return h.fail(c, asJSON, err)
	}
	return h.reply(c, asJSON, res.Rejected, res.FirstError)
}

// decode reads, counts and parses the body, and validates every span; the
// body and its parsed form are garbage once the spans are collected.
func (h *Handler) decode(req *http.Request, lim config.OTLPLimits, asJSON bool, who string) ([]ingest.Trace, error) {
	body, spent, err := readBody(req, lim)
	// Charged what was read (decompressed or not), also for a body refused
	// once read (a gzip bomb, a malformed stream): the principal's next
	// request waits for it (share).
	h.shares.Charge(who, int(spent), time.Now())
	if err != nil {
		return nil, err
	}
	defer putBuf(body) // pdata's form holds copies, never the body itself
	var td ptrace.Traces
	if asJSON {
		td, err = decodeJSON(body, lim)
	} else {
		td, err = decodeProto(body, lim)
	}
	if err != nil {
		return nil, err
	}
	return collect(td, lim)
}

func (h *Handler) limits() config.OTLPLimits {
	if h.Limits.MaxConcurrent <= 0 {
		return config.DefaultLimits().OTLP
	}
	return h.Limits
}

// share refuses a principal whose earlier requests spent more than its
// byte rate, with the time until they are paid back as Retry-After (at
// least a second: OTLP exporters retry 429 after it). Nothing of the body
// is read: a refusal costs the engine nothing.
func (h *Handler) share(lim config.OTLPLimits, who string) error {
	h.slotsOnce.Do(func() { h.init(lim) })
	d := h.shares.Debt(who, time.Now())
	if d <= 0 {
		return nil
	}
	d = max(d, time.Second) // Retry-After rounds up to whole seconds
	e := domain.LimitExceeded(domain.KindRateLimited, string(limits.OTLPByteRate),
		"this principal's OTLP requests are over %d bytes a second (burst %d); retry in %s", lim.BytesPerSecond, lim.ByteBurst, d.Round(time.Millisecond))
	e.RetryAfter = d
	return e
}

// init makes the decoding slots and the byte-rate buckets from lim.
func (h *Handler) init(lim config.OTLPLimits) {
	h.slots = make(chan struct{}, lim.MaxConcurrent)
	h.shares = budget.NewBuckets(float64(lim.BytesPerSecond), int(lim.ByteBurst))
}

// acquire waits (up to QueueTimeout) for one of MaxConcurrent slots, held
// from before the body is read until the spans are written, so concurrent
// large requests cannot multiply the memory one takes.
func (h *Handler) acquire(req *http.Request, lim config.OTLPLimits) (func(), error) {
	h.slotsOnce.Do(func() { h.init(lim) })
	h.waiting.Add(1)
	defer h.waiting.Add(-1)
	t := time.NewTimer(lim.QueueTimeout)
	defer t.Stop()
	select {
	case h.slots <- struct{}{}:
		return func() { <-h.slots }, nil
	case <-t.C:
		return nil, domain.LimitExceeded(domain.KindRateLimited, string(limits.OTLPConcurrent),
			"%d OTLP requests are being ingested; retry later", lim.MaxConcurrent)
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

// reply writes an ExportTraceServiceResponse, with partial success when
// some spans were rejected.
func (h *Handler) reply(c echo.Context, asJSON bool, rejected int, msg string) error {
	resp := ptraceotlp.NewExportResponse()
	if rejected > 0 {
		resp.PartialSuccess().SetRejectedSpans(int64(rejected))
		resp.PartialSuccess().SetErrorMessage(msg)
	}
	if asJSON {
		b, err := resp.MarshalJSON()
		if err != nil {
			return err
		}
		return c.Blob(http.StatusOK, "application/json", b)
	}
	b, err := resp.MarshalProto()
	if err != nil {
		return err
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
