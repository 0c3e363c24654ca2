package mcpapi

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
)

// Limits bound each tool call (config limits.graphql, as GraphQL; the
// graphql_query tool also passes the GraphQL handler's own gate and
// limits). The zero value bounds nothing.
type Limits struct {
	// MaxDuration is the call's deadline: a call still running then is
	// answered query_timeout.
	MaxDuration time.Duration
	// MaxResultBytes refuses a result larger than this (limit_exceeded,
	// mcp_result_bytes).
	MaxResultBytes int
	// Refused counts refusals by limit name (may be nil).
	Refused func(limit string)
	// Gate admits each tool call as one read of ToolCost points of its
	// principal (the GraphQL read gate: per-principal and engine-wide
	// concurrency, the read budget), so tool calls cannot hold the read
	// pool that GraphQL reads are kept from holding. graphql_query is
	// admitted by the GraphQL handler itself. Nil admits every call.
	Gate Gate
}

// Gate admits one read (readgate.Gate).
type Gate interface {
	Enter(ctx context.Context, who string, cost int) (leave func(), err error)
}

// ToolCost is what one tool call takes from its principal's read budget:
// a tool reads at most one page of threads or one thread.
const ToolCost = 10

// Names of the limits the tool calls are refused by.
const (
	LimitResultBytes = "graphql_response_bytes"
	LimitDuration    = "graphql_duration"
)

// limitTools is the middleware applying l to every tools/call.
func limitTools(l Limits, log func(ctx context.Context, tool string, err error) error) mcp.Middleware {
	if l.Refused == nil {
		l.Refused = func(string) {}
	}
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			call, ok := req.(*mcp.CallToolRequest)
			if !ok || call.Params == nil {
				return next(ctx, method, req)
			}
			parent := ctx
			if l.Gate != nil && call.Params.Name != "graphql_query" {
				p, _ := authz.PrincipalFrom(ctx)
				leave, err := l.Gate.Enter(ctx, p.Key(), ToolCost)
				if err != nil {
					return errorResult(log(parent, call.Params.Name, err)), nil
				}
				defer leave()
			}
			if l.MaxDuration > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, l.MaxDuration)
				defer cancel()
			}
			res, err := next(ctx, method, req)
			if parent.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				l.Refused(LimitDuration)
				e := domain.E(domain.KindUnavailable, domain.CodeQueryTimeout,
					"the call ran longer than %s and was stopped: ask for less or retry later", l.MaxDuration).WithDetail("limit", LimitDuration)
				e.RetryAfter = time.Second
				return errorResult(log(parent, call.Params.Name, e)), nil
			}
			if r, ok := res.(*mcp.CallToolResult); ok && r != nil && err == nil && l.MaxResultBytes > 0 {
				if b, merr := json.Marshal(r); merr == nil && len(b) > l.MaxResultBytes {
					l.Refused(LimitResultBytes)
					e := domain.LimitExceeded(domain.KindTooLarge, LimitResultBytes,
						"the result holds %d bytes, more than the %d allowed: ask for fewer threads or fields", len(b), l.MaxResultBytes).
						WithDetail("max", l.MaxResultBytes)
					return errorResult(log(parent, call.Params.Name, e)), nil
				}
			}
			return res, err
		}
	}
}

// errorResult is a tool error result (IsError) with err's text, as the SDK
// makes one of an error a tool returns.
func errorResult(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
}
