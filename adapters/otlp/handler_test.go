package otlp

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/limits"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
)

// spyBody records whether the handler read the body.
type spyBody struct {
	r    io.Reader
	read atomic.Bool
}

func (s *spyBody) Read(p []byte) (int, error) { s.read.Store(true); return s.r.Read(p) }
func (s *spyBody) Close() error               { return nil }

// serve runs one request through a handler mounted behind a fake auth that
// sets the given role (viewer, member…).
func serve(h *Handler, role domain.Role, body io.ReadCloser, header map[string]string) *httptest.ResponseRecorder {
	return serveAs(h, "sa", role, body, header)
}

// serveAs is serve for the service account id.
func serveAs(h *Handler, id string, role domain.Role, body io.ReadCloser, header map[string]string) *httptest.ResponseRecorder {
	e := echo.New()
	auth := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			p := domain.Principal{Kind: domain.PrincipalServiceAccount, ID: id, Role: role, Via: domain.CredentialAPIKey}
			c.SetRequest(c.Request().WithContext(authz.WithPrincipal(c.Request().Context(), p)))
			return next(c)
		}
	}
	h.Mount(e, auth)
	r := httptest.NewRequest(http.MethodPost, "/v1/traces", body)
	r.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	e.ServeHTTP(w, r)
	return w
}

func statusJSON(t *testing.T, w *httptest.ResponseRecorder) (code int, msg string) {
	t.Helper()
	var body struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("reply %q: %v", w.Body.String(), err)
	}
	return body.Code, body.Message
}

func TestViewerRefusedBeforeTheBodyIsRead(t *testing.T) {
	body := &spyBody{r: bytes.NewReader(gz(make([]byte, 1<<20)))}
	w := serve(&Handler{}, domain.RoleViewer, body, map[string]string{"Content-Encoding": "gzip"})
	if w.Code != http.StatusForbidden {
		t.Fatalf("viewer: %d %s", w.Code, w.Body)
	}
	if code, msg := statusJSON(t, w); code != 7 || !strings.HasPrefix(msg, "forbidden: ") {
		t.Errorf("status = %d %q", code, msg)
	}
	if body.read.Load() {
		t.Error("the body was read before the permission check")
	}
}

func TestLimitRefusalsAreCodedAndCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	counter := limits.NewCounter(reg)
	lim := config.DefaultLimits().OTLP
	lim.MaxDecodedBytes = 64 << 10
	h := &Handler{Limits: lim, Refusals: counter}
	bomb := gz(bytes.Repeat([]byte(" "), 1<<20))
	w := serve(h, domain.RoleMember, io.NopCloser(bytes.NewReader(bomb)), map[string]string{"Content-Encoding": "gzip"})
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("bomb: %d %s", w.Code, w.Body)
	}
	if code, msg := statusJSON(t, w); code != 8 || !strings.HasPrefix(msg, "limit_exceeded: ") {
		t.Errorf("status = %d %q", code, msg)
	}
	if n := refusals(t, reg, limits.OTLPDecodedBytes); n != 1 {
		t.Errorf("otlp_decoded_bytes refusals = %v, want 1", n)
	}

	// Protobuf replies carry the same status as google.rpc.Status.
	w = serve(h, domain.RoleMember, io.NopCloser(bytes.NewReader(bomb)),
		map[string]string{"Content-Encoding": "gzip", "Content-Type": "application/x-protobuf"})
	num, typ, n := protowire.ConsumeTag(w.Body.Bytes())
	code, _ := protowire.ConsumeVarint(w.Body.Bytes()[n:])
	if w.Code != http.StatusRequestEntityTooLarge || num != 1 || typ != protowire.VarintType || code != 8 {
		t.Errorf("protobuf status: %d %x", w.Code, w.Body.Bytes())
	}
}

// refusals reads threadengine_limit_refusals_total{limit=name}.
func refusals(t *testing.T, reg *prometheus.Registry, name limits.Name) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "limit" && l.GetValue() == string(name) {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no series for %s", name)
	return 0
}

// slowBody blocks until released, holding its decoding slot.
type slowBody struct{ release chan struct{} }

func (s slowBody) Read(p []byte) (int, error) { <-s.release; return 0, io.EOF }
func (s slowBody) Close() error               { return nil }

func TestConcurrentDecodesAreCapped(t *testing.T) {
	lim := config.DefaultLimits().OTLP
	lim.MaxConcurrent, lim.QueueTimeout = 1, 50*time.Millisecond
	h := &Handler{Limits: lim}
	hold := slowBody{release: make(chan struct{})}
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- serve(h, domain.RoleMember, hold, nil) }()
	deadline := time.Now().Add(time.Minute)
	for len(h.slots) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	w := serve(h, domain.RoleMember, io.NopCloser(strings.NewReader("{}")), nil)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
		t.Fatalf("second request: %d %s (Retry-After %q)", w.Code, w.Body, w.Header().Get("Retry-After"))
	}
	if code, msg := statusJSON(t, w); code != 8 || !strings.Contains(msg, "limit_exceeded") {
		t.Errorf("status = %d %q", code, msg)
	}
	close(hold.release)
	if first := <-done; first.Code != http.StatusBadRequest { // an empty body
		t.Errorf("first request: %d %s", first.Code, first.Body)
	}
	// The slot was released.
	w = serve(h, domain.RoleMember, io.NopCloser(strings.NewReader(`{"resourceSpans":[]}`)), nil)
	if w.Code != http.StatusOK {
		t.Errorf("after release: %d %s", w.Code, w.Body)
	}
}

func TestPartialSuccessReply(t *testing.T) {
	e := echo.New()
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	w := httptest.NewRecorder()
	if err := (&Handler{}).reply(e.NewContext(r, w), false, 3, "trace x: bad"); err != nil {
		t.Fatal(err)
	}
	// ExportTraceServiceResponse{partial_success{rejected_spans: 3, error_message}}
	var got coltracepb.ExportTraceServiceResponse
	if err := proto.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if ps := got.GetPartialSuccess(); ps.GetRejectedSpans() != 3 || ps.GetErrorMessage() != "trace x: bad" {
		t.Errorf("reply %x = %v", w.Body.Bytes(), &got)
	}
	// JSON: int64 as a string, as OTLP/JSON has it.
	w = httptest.NewRecorder()
	if err := (&Handler{}).reply(e.NewContext(r, w), true, 3, "trace x: bad"); err != nil {
		t.Fatal(err)
	}
	if body := w.Body.String(); body != `{"partialSuccess":{"rejectedSpans":"3","errorMessage":"trace x: bad"}}` {
		t.Errorf("JSON reply %s", body)
	}
}

// TestPrincipalByteRate is issue 25's OTLP write rate: a principal whose
// requests decoded more than its byte rate allows is refused 429 with
// Retry-After before its next body is read, and counted; another principal
// is not affected.
func TestPrincipalByteRate(t *testing.T) {
	reg := prometheus.NewRegistry()
	lim := config.DefaultLimits().OTLP
	lim.BytesPerSecond, lim.ByteBurst = 1<<10, 1<<20 // 1 KiB a second, burst 1 MiB
	h := &Handler{Limits: lim, Refusals: limits.NewCounter(reg)}
	body := func() []byte { return append(bytes.Repeat([]byte(" "), 800<<10), `{"resourceSpans":[]}`...) }
	for i := range 2 { // 1.6 MiB: the second is admitted (nothing owed yet) and leaves a debt
		if w := serveAs(h, "exporter", domain.RoleMember, io.NopCloser(bytes.NewReader(body())), nil); w.Code != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, w.Code, w.Body)
		}
	}
	spy := &spyBody{r: bytes.NewReader(body())}
	w := serveAs(h, "exporter", domain.RoleMember, spy, nil)
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("third request: %d %s, want 429", w.Code, w.Body)
	}
	if ra, err := strconv.Atoi(w.Header().Get("Retry-After")); err != nil || ra < 60 {
		t.Errorf("Retry-After %q, want the debt (about 600 s at 1 KiB/s)", w.Header().Get("Retry-After"))
	}
	if code, msg := statusJSON(t, w); code != 8 || !strings.HasPrefix(msg, "limit_exceeded: ") {
		t.Errorf("status = %d %q", code, msg)
	}
	if spy.read.Load() {
		t.Error("the refused request's body was read")
	}
	if n := refusals(t, reg, limits.OTLPByteRate); n != 1 {
		t.Errorf("otlp_byte_rate refusals = %v, want 1", n)
	}
	if w := serveAs(h, "other", domain.RoleMember, io.NopCloser(bytes.NewReader(body())), nil); w.Code != http.StatusOK {
		t.Fatalf("another principal: %d %s", w.Code, w.Body)
	}
}

// A body refused once read (here gzip decompressing past max_decoded_bytes)
// is charged too: bombs cannot keep the decoding slots busy for free.
func TestRefusedBodiesAreCharged(t *testing.T) {
	lim := config.DefaultLimits().OTLP
	lim.BytesPerSecond, lim.ByteBurst, lim.MaxDecodedBytes = 1<<10, 1<<20, 1<<20 // 1 KiB a second
	h := &Handler{Limits: lim}
	bomb := gz(bytes.Repeat([]byte(" "), 2<<20))
	// The first reads 1 MiB + 1 decompressed before it is refused: the
	// whole burst.
	w := serveAs(h, "bomber", domain.RoleMember, io.NopCloser(bytes.NewReader(bomb)), map[string]string{"Content-Encoding": "gzip"})
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("bomb: %d %s, want 413", w.Code, w.Body)
	}
	w = serveAs(h, "bomber", domain.RoleMember, io.NopCloser(bytes.NewReader(bomb)), map[string]string{"Content-Encoding": "gzip"})
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("second bomb: %d %s, want 429 (the refused body charged)", w.Code, w.Body)
	}
}
