package e2e

import (
	"net/http"
	"strings"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// One trace is one thread, whichever of its batches carries the
// application key: a batch with threadify.thread_key creates (or resumes)
// the key's thread and binds the trace to it, so a later batch of the same
// trace without the key, startThread with refs.otel_trace_id and the thread
// action with the key all resume it.
func TestOTLPThreadKeyAndTraceShareAThread(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, key := e.NewUser(t, domain.RoleMember)
		keyed := traceReq(0xcd, "Keyed order")
		keyed.ResourceSpans[0].ScopeSpans[0].Spans[0].Attributes = append(keyed.ResourceSpans[0].ScopeSpans[0].Spans[0].Attributes,
			kv("threadify.thread_key", "order-77"))
		post := func(m *tracepb.TracesData) {
			t.Helper()
			body, _ := proto.Marshal(m)
			if code, b := otlpPost(t, e, key, "application/x-protobuf", body, false); code != http.StatusOK {
				t.Fatalf("otlp: %d %s", code, b)
			}
		}
		post(keyed)
		post(traceReq(0xcd, "Child batch without the key"))
		trace := strings.Repeat("cd", 16)
		var n int
		var tid string
		db := e.Server.DB
		if err := db.Get(&n, db.Rebind(`SELECT COUNT(DISTINCT thread_id) FROM thread_refs WHERE ref_key = 'otel_trace_id' AND ref_value = ?`), trace); err != nil || n != 1 {
			t.Fatalf("%d threads for one trace (%v)", n, err)
		}
		if err := db.Get(&tid, db.Rebind(`SELECT thread_id FROM thread_keys WHERE namespace = 'key' AND key = 'order-77'`)); err != nil {
			t.Fatal(err)
		}
		c := connectWS(t, e, key)
		if r := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{"otel_trace_id": trace}}); r["threadId"] != tid {
			t.Fatalf("startThread with the trace id: %v, want %s", r["threadId"], tid)
		}
		if r := c.ok(map[string]any{"action": "thread", "requestId": "k", "threadKey": "order-77", "serviceName": "checkout-service"}); r["threadId"] != tid {
			t.Fatalf("thread by key: %v, want %s", r["threadId"], tid)
		}
	})
}
