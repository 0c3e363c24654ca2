// Package mcpapi serves the Model Context Protocol endpoint (/mcp) that lets
// AI agents read threads, contracts and integrity status. It is a thin
// transport: every tool calls the same app use cases as the GraphQL API, and
// graphql_query runs through the GraphQL adapter itself, so there is no
// second query path and the same permissions and complexity limit apply.
package mcpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/threadengine/engine/adapters/httperr"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/decisions"
	"github.com/threadengine/engine/app/readmodel"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Version is reported to MCP clients as the server implementation version.
const Version = "1.0.0"

// maxRequestBody bounds one MCP HTTP request. Tool arguments are small; the
// largest legitimate body is a graphql_query with its variables.
const maxRequestBody = 1 << 20

// GraphQLFunc executes one GraphQL operation for the principal in ctx, with
// the API's complexity limit, and returns the standard response document
// ({"data":…,"errors":[…]}). The GraphQL adapter provides it.
type GraphQLFunc func(ctx context.Context, query, operationName string, variables map[string]any) (json.RawMessage, error)

// Deps are the use cases the MCP tools call. Every field is required.
type Deps struct {
	// Decisions serve the can, should and next tools (optional: without
	// them those tools are not offered).
	Decisions *decisions.Decisions

	// Queries are the read use cases GraphQL resolves with.
	Queries *readmodel.Queries
	Actors  *readmodel.Actors
	GraphQL GraphQLFunc
	// Schema is the GraphQL SDL served as the graphql://schema resource.
	Schema string
	Log    *slog.Logger
	// Tracer traces tool calls and Metrics counts them (both optional).
	Tracer  trace.TracerProvider
	Metrics ports.MCPMetrics
	// Limits bound each tool call (deadline, result bytes).
	Limits Limits
}

// Handler is the /mcp HTTP endpoint. Mount it behind the authentication
// middleware: it expects the principal in the request context.
type Handler struct {
	http *mcp.StreamableHTTPHandler
}

// New builds the MCP server with its tools, resource and prompts.
func New(d Deps) *Handler {
	if d.Queries == nil || d.Actors == nil || d.GraphQL == nil || d.Schema == "" {
		panic("mcpapi.New: missing dependency")
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "threadengine", Title: "threadengine", Version: Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       sdkLogger(d.Log),
	})
	if d.Metrics == nil {
		d.Metrics = ports.NopMetrics{}
	}
	t := &tools{d: d}
	// Observed outermost, so a call cut by a limit is counted with its code.
	s.AddReceivingMiddleware(observeTools(d.Tracer, d.Metrics), limitTools(d.Limits, t.toolErr))
	t.register(s)
	addSchemaResource(s, d.Schema)
	addPrompts(s)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{
		// Stateless: every HTTP request is authenticated on its own and its
		// context (carrying the principal) is the one tool handlers run in, so
		// a revoked key or a role change applies to the very next call and no
		// session outlives its credential.
		Stateless:    true,
		JSONResponse: true,
		Logger:       sdkLogger(d.Log),
		// The SDK's DNS-rebinding guard rejects loopback requests with a
		// non-loopback Host, which breaks the usual reverse-proxy deployment.
		// Rebinding cannot reach this endpoint anyway: every request needs a
		// header credential or the host-bound session cookie, and
		// cookie-authenticated POSTs must carry the engine's Origin.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        maxRequestBody,
	})
	return &Handler{http: h}
}

// ServeHTTP serves the streamable HTTP transport. Without a principal in the
// request context it refuses the request (a coded problem, as REST answers
// it), so a mounting mistake fails closed.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, ok := authz.PrincipalFrom(r.Context()); !ok {
		_ = httperr.WriteProblem(w, r, domain.Public(domain.ErrUnauthenticated))
		return
	}
	h.http.ServeHTTP(w, r)
}

// toolError is the text an agent sees when a tool fails: the error's public
// view — the stable code, the message, for validation failures the
// offending argument, and when a retry may succeed the seconds to wait.
// Internal causes stay in the log.
type toolError struct {
	Code       domain.Code    `json:"code"`
	Message    string         `json:"message"`
	Field      string         `json:"field,omitempty"`
	Details    map[string]any `json:"details,omitempty"`
	RetryAfter int            `json:"retryAfter,omitempty"`
}

func (e *toolError) Error() string {
	b, err := json.Marshal(map[string]any{"error": e})
	if err != nil {
		return string(e.Code) + ": " + e.Message
	}
	return string(b)
}

// toolErr converts a use-case error into a tool error result (IsError), never
// a protocol error: the agent can read it and correct its call.
func (t *tools) toolErr(ctx context.Context, tool string, err error) error {
	p := httperr.Report(ctx, t.d.Log, err, "tool", tool)
	return &toolError{Code: p.Code, Message: p.Message, Field: p.Field, Details: p.Details, RetryAfter: p.RetryAfterSeconds()}
}

func invalidArg(field, msg string, args ...any) error {
	return domain.Invalid(field, msg, args...)
}
