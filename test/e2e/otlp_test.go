package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

func kv(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func otlpPost(t *testing.T, e *enginetest.Engine, key, contentType string, body []byte, gz bool) (int, []byte) {
	t.Helper()
	if gz {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write(body)
		w.Close()
		body = b.Bytes()
	}
	req, _ := http.NewRequest(http.MethodPost, e.URL+"/v1/traces", bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	if gz {
		req.Header.Set("Content-Encoding", "gzip")
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func traceReq(traceID byte, label string) *tracepb.TracesData {
	tid := bytes.Repeat([]byte{traceID}, 16)
	t0 := uint64(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC).UnixNano())
	return &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", "checkout-service"), kv("threadify.label", "from-resource")}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{
			{TraceId: tid, SpanId: []byte{1, 1, 1, 1, 1, 1, 1, 1}, Name: "checkout", StartTimeUnixNano: t0, EndTimeUnixNano: t0 + 5e6,
				Attributes: []*commonpb.KeyValue{kv("threadify.label", label), kv("threadify.ref.orderId", "O-9")}},
			{TraceId: tid, SpanId: []byte{2, 2, 2, 2, 2, 2, 2, 2}, ParentSpanId: []byte{1, 1, 1, 1, 1, 1, 1, 1}, Name: "pay",
				StartTimeUnixNano: t0 + 1e6, EndTimeUnixNano: t0 + 2e6,
				Attributes: []*commonpb.KeyValue{kv("threadify.context.amount", "5"), kv("http.method", "POST")},
				Status:     &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "card declined"},
				Events:     []*tracepb.Span_Event{{Name: "retrying", TimeUnixNano: t0 + 15e5, Attributes: []*commonpb.KeyValue{kv("attempt", "1")}}}},
		}}},
	}}}
}

func TestOTLPIngestion(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, key := e.NewUser(t, domain.RoleMember)
		_, viewerKey := e.NewUser(t, domain.RoleViewer)
		db := e.Server.DB
		count := func(q string, args ...any) int {
			t.Helper()
			var n int
			if err := db.Get(&n, db.Rebind(q), args...); err != nil {
				t.Fatal(err)
			}
			return n
		}
		body, _ := proto.Marshal(traceReq(0xab, "Order-9"))

		if code, _ := otlpPost(t, e, "", "application/x-protobuf", body, false); code != http.StatusUnauthorized {
			t.Fatalf("no key: %d", code)
		}
		if code, _ := otlpPost(t, e, viewerKey, "application/x-protobuf", body, false); code != http.StatusForbidden {
			t.Fatalf("viewer key: %d", code)
		}
		if n := count(`SELECT COUNT(*) FROM threads`); n != 0 {
			t.Fatalf("refused requests wrote %d threads", n)
		}

		if code, b := otlpPost(t, e, key, "application/x-protobuf", body, true); code != http.StatusOK {
			t.Fatalf("gzip protobuf: %d %s", code, b)
		}
		var tid, label string
		if err := db.QueryRow(db.Rebind(`SELECT t.id, t.label FROM threads t JOIN thread_refs r ON r.thread_id = t.id
 WHERE r.ref_key = 'otel_trace_id' AND r.ref_value = ?`), strings.Repeat("ab", 16)).Scan(&tid, &label); err != nil {
			t.Fatal(err)
		}
		if label != "Order-9" {
			t.Fatalf("label %q: the span attribute must win over the resource", label)
		}
		var status, ctx string
		if err := db.QueryRow(db.Rebind(`SELECT status, CAST(context AS TEXT) FROM thread_activities WHERE thread_id = ? AND step_name = 'pay'`), tid).Scan(&status, &ctx); err != nil {
			t.Fatal(err)
		}
		var cm map[string]string
		_ = json.Unmarshal([]byte(ctx), &cm)
		if status != "failed" || cm["amount"] != "5" || cm["http.method"] != "POST" || len(cm) != 2 {
			t.Fatalf("pay status %q context %s", status, ctx)
		}
		if n := count(`SELECT COUNT(*) FROM step_substeps WHERE thread_id = ? AND name = 'retrying'`, tid); n != 1 {
			t.Fatalf("event sub-steps %d", n)
		}
		if n := count(`SELECT COUNT(*) FROM thread_refs WHERE thread_id = ? AND ref_key = 'orderId' AND ref_value = 'O-9'`, tid); n != 1 {
			t.Fatal("threadify.ref.* not stored")
		}

		// The exporter retries the same batch: deduplicated by trace+span id.
		if code, _ := otlpPost(t, e, key, "application/x-protobuf", body, false); code != http.StatusOK {
			t.Fatalf("retry: %d", code)
		}
		if n := count(`SELECT COUNT(*) FROM thread_activities WHERE thread_id = ?`, tid); n != 2 {
			t.Fatalf("activities after retry %d, want 2", n)
		}
		if n := count(`SELECT COUNT(*) FROM threads`); n != 1 {
			t.Fatalf("threads after retry %d", n)
		}

		// OTLP/JSON with hex ids joins the same thread.
		js := `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},
 "scopeSpans":[{"spans":[{"traceId":"` + strings.Repeat("ab", 16) + `","spanId":"0303030303030303","parentSpanId":"0101010101010101",
 "name":"ship","startTimeUnixNano":"1795255200000000000","endTimeUnixNano":"1795255201000000000","status":{"code":1}}]}]}]}`
		if code, b := otlpPost(t, e, key, "application/json", []byte(js), false); code != http.StatusOK {
			t.Fatalf("json: %d %s", code, b)
		}
		if n := count(`SELECT COUNT(*) FROM thread_activities WHERE thread_id = ? AND step_name = 'ship' AND status = 'success'`, tid); n != 1 {
			t.Fatal("JSON span not ingested into the trace's thread")
		}

		// Malformed bodies: 400 and nothing written, even when a valid trace
		// precedes the bad span in the same request.
		before := count(`SELECT COUNT(*) FROM thread_activities`)
		bad := traceReq(0xcd, "X")
		bad.ResourceSpans[0].ScopeSpans[0].Spans[1].SpanId = []byte{1, 2, 3}
		bb, _ := proto.Marshal(bad)
		for name, tc := range map[string]struct {
			ct   string
			body []byte
		}{
			"short span id": {"application/x-protobuf", bb},
			"garbage":       {"application/x-protobuf", []byte{0xff, 0xff, 0xff}},
			"bad json":      {"application/json", []byte(`{"resourceSpans":[`)},
			"bad hex":       {"application/json", []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz","spanId":"01","name":"a"}]}]}]}`)},
		} {
			if code, _ := otlpPost(t, e, key, tc.ct, tc.body, false); code != http.StatusBadRequest {
				t.Fatalf("%s: status %d, want 400", name, code)
			}
		}
		if after := count(`SELECT COUNT(*) FROM thread_activities`); after != before || count(`SELECT COUNT(*) FROM threads`) != 1 {
			t.Fatalf("malformed requests wrote data: %d → %d activities", before, after)
		}
	})
}

// Bearer auth works, and spans a thread refuses come back as partial success.
func TestOTLPBearerAndPartialSuccess(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, key := e.NewUser(t, domain.RoleMember)
		c := connectWS(t, e, key)
		tid := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		c.ok(map[string]any{"action": "threadEnd", "threadId": tid, "status": "cancelled"})
		js := `{"resourceSpans":[{"resource":{"attributes":[{"key":"threadify.thread_id","value":{"stringValue":"` + tid + `"}}]},
 "scopeSpans":[{"spans":[{"traceId":"` + strings.Repeat("ef", 16) + `","spanId":"0404040404040404","name":"late"}]}]}]}`
		req, _ := http.NewRequest(http.MethodPost, e.URL+"/v1/traces", strings.NewReader(js))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			PartialSuccess struct {
				RejectedSpans string `json:"rejectedSpans"`
				ErrorMessage  string `json:"errorMessage"`
			} `json:"partialSuccess"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d %v", resp.StatusCode, err)
		}
		if body.PartialSuccess.RejectedSpans != "1" || !strings.Contains(body.PartialSuccess.ErrorMessage, "cancelled") {
			t.Fatalf("partial success %+v", body.PartialSuccess)
		}
	})
}
