package e2e

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/httperr/httperrtest"
	"github.com/threadengine/engine/adapters/mcpapi"
	"github.com/threadengine/engine/adapters/server"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// collector is an OTLP/HTTP trace receiver on loopback: it decodes every
// export request (protobuf, what the engine's exporter sends) and keeps
// the spans.
type collector struct {
	URL   string
	mu    sync.Mutex
	spans []*tracepb.Span
	svc   map[string]bool // service.name of the resources seen
	paths map[string]bool
}

func newCollector(t *testing.T) *collector {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{URL: "http://" + l.Addr().String(), svc: map[string]bool{}, paths: map[string]bool{}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "want OTLP protobuf", http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.paths[r.URL.Path] = true
		for _, rs := range req.GetResourceSpans() {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.GetKey() == "service.name" {
					c.svc[a.GetValue().GetStringValue()] = true
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				c.spans = append(c.spans, ss.GetSpans()...)
			}
		}
		c.mu.Unlock()
		b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(b)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return c
}

// trace returns the spans of traceID by name, once every name in want is
// there (flushing the engine's exporter while it waits).
func (c *collector) trace(t *testing.T, es []*enginetest.Engine, traceID string, want ...string) map[string]*tracepb.Span {
	t.Helper()
	var got map[string]*tracepb.Span
	var missing []string
	pollUntilf(t, func() string { return fmt.Sprintf("trace %s lacks %v; has %v", traceID, missing, keysOf(got)) }, func() bool {
		for _, e := range es {
			_ = e.Server.Tracing.Flush(context.Background())
		}
		got = map[string]*tracepb.Span{}
		c.mu.Lock()
		for _, s := range c.spans {
			if hex.EncodeToString(s.GetTraceId()) == traceID {
				got[s.GetName()] = s
			}
		}
		c.mu.Unlock()
		missing = []string{}
		for _, n := range want {
			if got[n] == nil {
				missing = append(missing, n)
			}
		}
		return len(missing) == 0
	})
	return got
}

func keysOf(m map[string]*tracepb.Span) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func spanID(s *tracepb.Span) string   { return hex.EncodeToString(s.GetSpanId()) }
func parentID(s *tracepb.Span) string { return hex.EncodeToString(s.GetParentSpanId()) }
func attr(s *tracepb.Span, k string) string {
	for _, a := range s.GetAttributes() {
		if a.GetKey() == k {
			return a.GetValue().GetStringValue()
		}
	}
	return ""
}

// One step followed through the engine: the WebSocket frame (continuing
// the trace its traceparent names), the use case, the store commit, the
// push to the subscriber and the webhook delivery (whose request carries
// the trace on to the receiver) are one trace in a real OTLP receiver; a
// GraphQL request and an MCP tool call continue the traceparent of their
// HTTP request; log lines of a traced request carry its trace id.
func TestEngineTracesAStep(t *testing.T) {
	t.Parallel()
	forEachDialectD(t, func(t *testing.T, d sqldb.Dialect) {
		col := newCollector(t)
		logs := httperrtest.NewLogs()
		e := enginetest.Start(t, d, enginetest.WithConfig(func(c *config.Config) {
			alertsFast(c)
			c.Telemetry.Tracing.Endpoint = col.URL
			c.Telemetry.Tracing.ServiceName = "engine-under-test"
		}), func(_ *config.Config, o *server.Options) {
			o.Logger = logs.Logger()
		})
		_, key := e.NewUser(t, domain.RoleMember)

		var hookTrace sync.Map
		hook := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hookTrace.Store("traceparent", r.Header.Get("traceparent"))
			w.WriteHeader(http.StatusNoContent)
		})}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = hook.Serve(l) }()
		t.Cleanup(func() { _ = hook.Close() })
		createWebhook(t, e, map[string]any{"name": "traced", "url": "http://" + l.Addr().String() + "/hook", "events": []string{"step.failed"}})

		c := connectWS(t, e, key)
		th := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		c.ok(map[string]any{"action": "subscribe", "stepName": "charge", "requestId": "sub"})
		const traceID, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
		frame := step(th, "charge", "failed", "c1", nil)
		frame["traceparent"] = "00-" + traceID + "-" + callerSpan + "-01"
		c.ok(frame)
		p := c.push(10 * time.Second)
		c.ok(map[string]any{"action": "ack_notification", "ackToken": p["ackToken"], "requestId": "ack"})

		got := col.trace(t, []*enginetest.Engine{e}, traceID, "ws recordThreadEvent", "threads.RecordStep", "threadstore.AppendStep",
			"notification push", "webhook POST")
		ws, uc, commit := got["ws recordThreadEvent"], got["threads.RecordStep"], got["threadstore.AppendStep"]
		if parentID(ws) != callerSpan || ws.GetKind() != tracepb.Span_SPAN_KIND_SERVER || attr(ws, "threadengine.thread.id") != th {
			t.Errorf("frame span %v: want a server span, child of the caller's %s, naming the thread", ws, callerSpan)
		}
		if parentID(uc) != spanID(ws) || parentID(commit) != spanID(uc) {
			t.Errorf("use case %s (parent %s) and commit (parent %s) do not nest under the frame %s",
				spanID(uc), parentID(uc), parentID(commit), spanID(ws))
		}
		if attr(commit, "threadengine.step.id") == "" || attr(commit, "db.system.name") == "" {
			t.Errorf("commit span attributes %v", commit.GetAttributes())
		}
		for _, n := range []string{"notification push", "webhook POST"} {
			if parentID(got[n]) != spanID(commit) {
				t.Errorf("%s: parent %s, want the commit span %s", n, parentID(got[n]), spanID(commit))
			}
		}
		if attr(got["notification push"], "threadengine.notification.id") != p["notification"].(map[string]any)["notificationId"] {
			t.Errorf("push span %v", got["notification push"].GetAttributes())
		}
		tp, _ := hookTrace.Load("traceparent")
		if s, _ := tp.(string); !strings.HasPrefix(s, "00-"+traceID+"-"+spanID(got["webhook POST"])) {
			t.Errorf("webhook request traceparent %q, want the delivery span of trace %s", tp, traceID)
		}

		// A Threadify span exporter's frame names the span it records in
		// its refs: the frame's span continues that trace.
		const sdkTrace, sdkSpan = "6bf92f3577b34da6a3ce929d0e0e4736", "10f067aa0ba902b7"
		frame = step(th, "ship", "success", "s1", nil)
		frame["refs"] = map[string]any{"otel_trace_id": sdkTrace, "otel_span_id": sdkSpan}
		c.ok(frame)
		if s := col.trace(t, []*enginetest.Engine{e}, sdkTrace, "ws recordThreadEvent")["ws recordThreadEvent"]; parentID(s) != sdkSpan {
			t.Errorf("span exporter frame: parent %s, want %s", parentID(s), sdkSpan)
		}

		// GraphQL over HTTP, continuing the request's traceparent.
		const gqlTrace = "0af7651916cd43dd8448eb211c80319c"
		body, _ := json.Marshal(map[string]any{"query": `query GetThread($id: ID!) { thread(id: $id) { id } }`, "variables": map[string]any{"id": th}})
		resp, raw := e.DoWith(t, http.MethodPost, "/graphql", body, func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+key)
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("traceparent", "00-"+gqlTrace+"-b7ad6b7169203331-01")
		})
		wantStatus(t, resp, raw, http.StatusOK)
		g := col.trace(t, []*enginetest.Engine{e}, gqlTrace, "POST /graphql", "graphql GetThread")
		if parentID(g["POST /graphql"]) != "b7ad6b7169203331" || parentID(g["graphql GetThread"]) != spanID(g["POST /graphql"]) {
			t.Errorf("graphql spans do not nest: %v", g)
		}
		// Its log line names the trace.
		logged := func() bool {
			for _, r := range logs.Mentioning(slog.LevelInfo, gqlTrace) {
				if r.Message == "http request" && r.Attrs["trace_id"] == gqlTrace && r.Attrs["route"] == "/graphql" {
					return true
				}
			}
			return false
		}
		pollUntil(t, "a log line with trace_id "+gqlTrace, logged)

		// An MCP tool call is a span under its HTTP request.
		cs := mustConnect(t, e, key)
		if res := callTool(t, cs, mcpapi.ToolGetThread, map[string]any{"thread_id": th}); res.IsError {
			t.Fatalf("get_thread: %s", resultText(res))
		}
		pollUntil(t, "an MCP tool span", func() bool {
			_ = e.Server.Tracing.Flush(context.Background())
			col.mu.Lock()
			var tool *tracepb.Span
			byID := map[string]*tracepb.Span{}
			for _, s := range col.spans {
				byID[spanID(s)] = s
				if s.GetName() == "mcp tools/call get_thread" {
					tool = s
				}
			}
			col.mu.Unlock()
			if tool != nil {
				if parent := byID[parentID(tool)]; parent == nil || parent.GetName() != "POST /mcp" {
					t.Errorf("tool span's parent %v, want the POST /mcp span", parent)
				}
				return true
			}
			return false
		})
		col.mu.Lock()
		if !col.svc["engine-under-test"] || !col.paths["/v1/traces"] {
			t.Errorf("service names %v, paths %v", col.svc, col.paths)
		}
		col.mu.Unlock()
	})
}

// A step committed on one replica and pushed by another is one trace: the
// push span, on the replica holding the subscriber's socket, continues
// from the traceparent stored with the notification.
func TestReplicasTraceAPushAcrossReplicas(t *testing.T) {
	t.Parallel()
	col := newCollector(t)
	traced := enginetest.WithConfig(func(c *config.Config) {
		c.Security.HashChainSecret = ""
		c.Telemetry.Tracing.Endpoint = col.URL
	})
	a := enginetest.Start(t, sqldb.Postgres, traced)
	b := enginetest.Start(t, sqldb.Postgres, traced, enginetest.WithDatabase(a.Config.Database.URL), enginetest.WithoutOwner(),
		enginetest.WithClockAt(a.Clock.Now()))
	_, key := a.NewUser(t, domain.RoleMember)
	sub := connectWS(t, b, key)
	sub.ok(map[string]any{"action": "subscribe", "stepName": "ship", "requestId": "sub"})
	w := connectWS(t, a, key)
	th := w.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
	const traceID = "5bf92f3577b34da6a3ce929d0e0e4736"
	frame := step(th, "ship", "success", "s1", nil)
	frame["traceparent"] = "00-" + traceID + "-00f067aa0ba902b7-01"
	w.ok(frame)
	sub.push(10 * time.Second)
	got := col.trace(t, []*enginetest.Engine{a, b}, traceID, "threadstore.AppendStep", "notification push")
	if parentID(got["notification push"]) != spanID(got["threadstore.AppendStep"]) {
		t.Errorf("push on the other replica: parent %s, want the commit span %s", parentID(got["notification push"]),
			spanID(got["threadstore.AppendStep"]))
	}
}
