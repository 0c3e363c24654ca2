package mcpapi

import (
	"context"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/threadengine/engine/adapters/tracing"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// toolUnknown labels calls of a tool the server does not have.
const toolUnknown = "unknown"

// ToolNames are the labels tool calls are counted under: every tool, and
// unknown.
func ToolNames() []string {
	return []string{ToolGetThread, ToolSearchThreads, ToolContractGraph, ToolResolveActors, ToolVerifyThreadIntegrity,
		ToolGraphQLQuery, toolUnknown}
}

func toolLabel(name string) string {
	for _, t := range ToolNames() {
		if t == name {
			return t
		}
	}
	return toolUnknown
}

// observeTools is the server's middleware for tools/call: a span "mcp
// tools/call <tool>" (child of the HTTP request's, or of the traceparent in
// the call's _meta, as OpenTelemetry's MCP conventions carry it) and
// threadengine_mcp_tool_calls_* by tool and error code.
func observeTools(tp trace.TracerProvider, metrics ports.MCPMetrics) mcp.Middleware {
	tracer := tracing.Tracer(tp, "mcpapi")
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			call, ok := req.(*mcp.CallToolRequest)
			if !ok || call.Params == nil {
				return next(ctx, method, req)
			}
			start := time.Now()
			tool := toolLabel(call.Params.Name)
			if p, ok := call.Params.Meta["traceparent"].(string); ok {
				ctx = tracing.WithParent(ctx, p)
			}
			ctx, span := tracer.Start(ctx, "mcp tools/call "+tool, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(tracing.AttrTool.String(call.Params.Name)))
			res, err := next(ctx, method, req)
			failure := err
			if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError && failure == nil {
				if failure = r.GetError(); failure == nil {
					failure = errors.New("tool error")
				}
			}
			code := ""
			if failure != nil {
				var te *toolError
				if errors.As(failure, &te) {
					code = string(te.Code)
				} else {
					code = string(domain.Public(failure).Code)
				}
			}
			metrics.MCPToolCall(tool, code, time.Since(start))
			tracing.End(span, code, failure)
			return res, err
		}
	}
}
