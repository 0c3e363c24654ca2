package otlp

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/limits"
	"github.com/threadengine/engine/domain"
)

func kv(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

var (
	tid = bytes.Repeat([]byte{7}, 16)
	sid = []byte{1, 2, 3, 4, 5, 6, 7, 8}
	t0  = uint64(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC).UnixNano())
)

func sample() *tracepb.TracesData {
	nested := &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{
		Values: []*commonpb.KeyValue{kv("a", "1")}}}}
	return &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", "checkout-service")}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{
			{TraceId: tid, SpanId: sid, Name: "checkout", StartTimeUnixNano: t0, EndTimeUnixNano: t0 + 5e6,
				Attributes: []*commonpb.KeyValue{kv("threadify.label", "L"), {Key: "obj", Value: nested}},
				Events:     []*tracepb.Span_Event{{Name: "retry", TimeUnixNano: t0 + 1, Attributes: []*commonpb.KeyValue{kv("n", "1")}}},
				Status:     &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "declined"}},
			{TraceId: tid, SpanId: []byte{9, 9, 9, 9, 9, 9, 9, 9}, ParentSpanId: sid, Name: "pay", StartTimeUnixNano: t0 + 2},
		}}},
	}}}
}

// otlpJSON is the OTLP/JSON form of td: hex ids, as exporters send them.
func otlpJSON(t *testing.T, td *tracepb.TracesData) []byte {
	t.Helper()
	b, err := protojson.Marshal(td)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, id := range [][]byte{tid, sid, {9, 9, 9, 9, 9, 9, 9, 9}} {
		s = strings.ReplaceAll(s, `"`+b64(id)+`"`, `"`+hex.EncodeToString(id)+`"`)
	}
	return []byte(s)
}

func b64(b []byte) string {
	m, _ := protojson.Marshal(&commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: b}})
	return strings.TrimSuffix(strings.TrimPrefix(string(m), `{"bytesValue":"`), `"}`)
}

func limitOf(t *testing.T, err error) string {
	t.Helper()
	de := domain.AsError(err)
	if de.Code != domain.CodeLimitExceeded {
		t.Fatalf("error %v: want code limit_exceeded", err)
	}
	return de.Details["limit"].(string)
}

func TestDecodeProtoAndJSONAgree(t *testing.T) {
	lim := config.DefaultLimits().OTLP
	want := sample()
	wire, _ := proto.Marshal(want)
	fromProto, err := decodeProto(wire, lim)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := decodeJSON(otlpJSON(t, want), lim)
	if err != nil {
		t.Fatal(err)
	}
	// Both decoded forms are the request that was sent (pdata writes the
	// empty scope and status messages the request left out).
	var forms [2][]byte
	for i, td := range []ptrace.Traces{fromProto, fromJSON} {
		b, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
		if err != nil {
			t.Fatal(err)
		}
		var got tracepb.TracesData
		if err := proto.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		for _, ss := range want.ResourceSpans[0].ScopeSpans {
			ss.Scope = &commonpb.InstrumentationScope{}
			for _, sp := range ss.Spans {
				if sp.Status == nil {
					sp.Status = &tracepb.Status{}
				}
			}
		}
		if !proto.Equal(&got, want) {
			t.Fatalf("decoded form %d differs:\n got %v\nwant %v", i, &got, want)
		}
		forms[i] = b
	}
	if !bytes.Equal(forms[0], forms[1]) {
		t.Error("protobuf and JSON decode differently")
	}
	// snake_case ids and keys are OTLP/JSON's other accepted spelling.
	snake := `{"resource_spans":[{"scope_spans":[{"spans":[{"trace_id":"` + hex.EncodeToString(tid) + `","span_id":"` +
		hex.EncodeToString(sid) + `","name":"x"}]}]}]}`
	td, err := decodeJSON([]byte(snake), lim)
	if err != nil {
		t.Fatal(err)
	}
	got := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	if tr := got.TraceID(); !bytes.Equal(tr[:], tid) {
		t.Fatalf("snake_case trace id decoded as %x", tr)
	}
	if sp := got.SpanID(); !bytes.Equal(sp[:], sid) {
		t.Fatalf("snake_case span id decoded as %x", sp)
	}
}

func TestDecodeRefusesMalformed(t *testing.T) {
	lim := config.DefaultLimits().OTLP
	for name, body := range map[string]string{
		"not json":        `{"resourceSpans":`,
		"two values":      `{} {}`,
		"empty":           ``,
		"id not hex":      `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz"}]}]}]}`,
		"id not a string": `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":12}]}]}]}`,
		"wrong shape":     `{"resourceSpans":{"x":1}}`,
	} {
		_, err := decodeJSON([]byte(body), lim)
		if domain.KindOf(err) != domain.KindInvalid {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
	if _, err := decodeProto([]byte{0x0a, 0x05, 0x01}, lim); domain.KindOf(err) != domain.KindInvalid {
		t.Errorf("truncated protobuf: %v, want invalid", err)
	}
}

// manyAttrs is one span with n empty attributes: 2 bytes each on the wire,
// about 100 in memory once decoded.
func manyAttrs(n int) *tracepb.TracesData {
	td := sample()
	sp := td.ResourceSpans[0].ScopeSpans[0].Spans[0]
	for i := 0; i < n; i++ {
		sp.Attributes = append(sp.Attributes, &commonpb.KeyValue{})
	}
	return td
}

func TestObjectLimitBeforeUnmarshal(t *testing.T) {
	lim := config.DefaultLimits().OTLP
	lim.MaxObjects = 1000
	wire, _ := proto.Marshal(manyAttrs(1000))
	td, err := decodeProto(wire, lim)
	if got := limitOf(t, err); got != string(limits.OTLPObjects) {
		t.Errorf("protobuf: limit %s", got)
	}
	if td != (ptrace.Traces{}) {
		t.Error("the body was unmarshalled before it was counted")
	}
	if _, err := decodeJSON(otlpJSON(t, manyAttrs(1000)), lim); limitOf(t, err) != string(limits.OTLPObjects) {
		t.Errorf("json: limit %v", err)
	}
	// Within the limit both decode.
	wire, _ = proto.Marshal(manyAttrs(900))
	if _, err := decodeProto(wire, lim); err != nil {
		t.Errorf("900 attributes: %v", err)
	}
}

func TestNestingLimit(t *testing.T) {
	lim := config.DefaultLimits().OTLP
	v := &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "leaf"}}
	for i := 0; i < 40; i++ {
		v = &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{v}}}}
	}
	td := sample()
	sp := td.ResourceSpans[0].ScopeSpans[0].Spans[0]
	sp.Attributes = append(sp.Attributes, &commonpb.KeyValue{Key: "deep", Value: v})
	wire, _ := proto.Marshal(td)
	_, err := decodeProto(wire, lim)
	limitOf(t, err)
	deep := strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100)
	_, err = decodeJSON([]byte(`{"x":`+deep+`}`), lim)
	limitOf(t, err)
}

func TestSpanLimitAndResourceCopies(t *testing.T) {
	lim := config.DefaultLimits().OTLP
	lim.MaxSpans = 1
	wire, _ := proto.Marshal(sample()) // two spans
	_, err := decodeProto(wire, lim)
	if got := limitOf(t, err); got != string(limits.OTLPSpans) {
		t.Errorf("limit %s, want otlp_spans", got)
	}
	// 300 spans sharing 300 resource attributes: 600 objects on the wire,
	// 90,000 attribute copies once collected.
	lim = config.DefaultLimits().OTLP
	lim.MaxObjects = 10000
	big := &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{Resource: &resourcepb.Resource{},
		ScopeSpans: []*tracepb.ScopeSpans{{}}}}}
	rs := big.ResourceSpans[0]
	for i := 0; i < 300; i++ {
		rs.Resource.Attributes = append(rs.Resource.Attributes, kv("r"+string(rune('a'+i%26))+strings.Repeat("x", i/26), "v"))
		id := []byte{1, 0, 0, 0, 0, 0, byte(i >> 8), byte(i)}
		rs.ScopeSpans[0].Spans = append(rs.ScopeSpans[0].Spans, &tracepb.Span{TraceId: tid, SpanId: id, Name: "s"})
	}
	wire, _ = proto.Marshal(big)
	td, err := decodeProto(wire, lim)
	if err != nil {
		t.Fatalf("wire count: %v", err)
	}
	_, err = collect(td, lim)
	if got := limitOf(t, err); got != string(limits.OTLPObjects) {
		t.Errorf("limit %s", got)
	}
}

// decoded is td as the handler sees it: on the wire and back through pdata.
func decoded(t *testing.T, td *tracepb.TracesData) (ptrace.Traces, error) {
	t.Helper()
	wire, err := proto.Marshal(td)
	if err != nil {
		t.Fatal(err)
	}
	return decodeProto(wire, config.DefaultLimits().OTLP)
}

func TestCollectValidatesSpans(t *testing.T) {
	lim := config.DefaultLimits().OTLP
	td, err := decoded(t, sample())
	if err != nil {
		t.Fatal(err)
	}
	traces, err := collect(td, lim)
	if err != nil {
		t.Fatal(err)
	}
	if len(traces) != 1 || len(traces[0].Spans) != 2 {
		t.Fatalf("traces = %+v", traces)
	}
	root := traces[0].Spans[0]
	if root.Name != "checkout" || !root.Failed || root.StatusMessage != "declined" || root.Attr("service.name") != "checkout-service" ||
		root.Attributes["service.name"] != "" || root.Attr("obj") != `{"a":"1"}` || len(root.Events) != 1 || root.Events[0].Name != "retry" ||
		root.Events[0].EventStatus() != domain.SubStepRetry {
		t.Errorf("root span = %+v", root)
	}
	if got := traces[0].Spans[1]; got.ParentID != hex.EncodeToString(sid) || got.TraceID != hex.EncodeToString(tid) {
		t.Errorf("child span = %+v", got)
	}
	for name, mutate := range map[string]func(*tracepb.Span){
		"short trace id": func(s *tracepb.Span) { s.TraceId = []byte{1} },
		"zero trace id":  func(s *tracepb.Span) { s.TraceId = make([]byte, 16) },
		"zero span id":   func(s *tracepb.Span) { s.SpanId = make([]byte, 8) },
		"bad parent":     func(s *tracepb.Span) { s.ParentSpanId = []byte{1} },
		"no name":        func(s *tracepb.Span) { s.Name = "" },
		"ends early":     func(s *tracepb.Span) { s.EndTimeUnixNano = s.StartTimeUnixNano - 1 },
	} {
		td := sample()
		mutate(td.ResourceSpans[0].ScopeSpans[0].Spans[0])
		pd, err := decoded(t, td)
		if err == nil {
			_, err = collect(pd, lim)
		}
		if domain.KindOf(err) != domain.KindInvalid {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func request(body []byte, encoding string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/v1/traces", bytes.NewReader(body))
	if encoding != "" {
		r.Header.Set("Content-Encoding", encoding)
	}
	return r
}

func TestReadBodyLimits(t *testing.T) {
	lim := config.DefaultLimits().OTLP
	lim.MaxBodyBytes, lim.MaxDecodedBytes = 1000, 4000

	b, _, err := readBody(request(gz([]byte("hello")), "gzip"), lim)
	if err != nil || string(b) != "hello" {
		t.Fatalf("gzip body = %q, %v", b, err)
	}
	// A gzip bomb: 1 MB of zeros compresses to about 1 KB.
	bomb := gz(make([]byte, 1<<20))
	lim.MaxBodyBytes = int64(len(bomb)) + 10
	lim.MaxDecodedBytes = lim.MaxBodyBytes * 4
	if _, _, err := readBody(request(bomb, "gzip"), lim); limitOf(t, err) != string(limits.OTLPDecodedBytes) {
		t.Errorf("bomb: %v", err)
	}
	lim.MaxBodyBytes, lim.MaxDecodedBytes = 1000, 4000
	big := bytes.Repeat([]byte("x"), 1001)
	if _, _, err := readBody(request(big, ""), lim); limitOf(t, err) != string(limits.OTLPBodyBytes) {
		t.Errorf("plain: %v", err)
	}
	// Without Content-Length (chunked) the limit still holds.
	r := request(big, "")
	r.ContentLength = -1
	if _, _, err := readBody(r, lim); limitOf(t, err) != string(limits.OTLPBodyBytes) {
		t.Errorf("chunked: %v", err)
	}
	if _, _, err := readBody(request([]byte("not gzip"), "gzip"), lim); domain.KindOf(err) != domain.KindInvalid {
		t.Errorf("bad gzip: %v", err)
	}
	if _, _, err := readBody(request([]byte("x"), "br"), lim); domain.KindOf(err) != domain.KindInvalid {
		t.Errorf("brotli: %v", err)
	}
}

func TestScanJSONSkipsStrings(t *testing.T) {
	lim := config.DefaultLimits().OTLP
	lim.MaxObjects = 2
	if err := scanJSON([]byte(`{"a":"{[{[","b\"{":["x\\"]}`), lim); err != nil {
		t.Errorf("brackets inside strings were counted: %v", err)
	}
	if got := limitOf(t, scanJSON([]byte(`{"a":[{}]}`), lim)); got != string(limits.OTLPObjects) {
		t.Errorf("limit %s", got)
	}
}
