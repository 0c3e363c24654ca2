package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/threadengine/engine/domain"
)

// Tool names.
const (
	ToolGetThread             = "get_thread"
	ToolSearchThreads         = "search_threads"
	ToolContractGraph         = "contract_graph"
	ToolResolveActors         = "resolve_actors"
	ToolVerifyThreadIntegrity = "verify_thread_integrity"
	ToolGraphQLQuery          = "graphql_query"
)

// maxQueryLen bounds graphql_query's query text (the GraphQL endpoint has its
// own body limit; this keeps the tool's error precise).
const maxQueryLen = 64 << 10

type tools struct{ d Deps }

func readOnly(title string) *mcp.ToolAnnotations {
	f := false
	return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: true, DestructiveHint: &f, IdempotentHint: true, OpenWorldHint: &f}
}

func (t *tools) register(s *mcp.Server) {
	t.registerThreads(s)
	t.registerDecisions(s)

	mcp.AddTool(s, &mcp.Tool{
		Name:  ToolResolveActors,
		Title: "Resolve actors",
		Description: "Map principal ids (thread owners, step actors) to their display name and type " +
			"(user or service_account). Ids that name no principal (for example a service name recorded by an " +
			"SDK) are listed under unresolved. At most 100 ids per call.",
		Annotations: readOnly("Resolve actors"),
	}, t.resolveActors)

	mcp.AddTool(s, &mcp.Tool{
		Name:  ToolVerifyThreadIntegrity,
		Title: "Verify thread integrity",
		Description: "Recompute a thread's tamper-evident hash chain (HMAC-SHA256 over every recorded step " +
			"attempt, each linked to the previous one). verified=false means a recorded event was altered, " +
			"removed or reordered; broken_at and broken_step_id locate the first bad link.",
		Annotations: readOnly("Verify thread integrity"),
	}, t.verifyIntegrity)

	mcp.AddTool(s, &mcp.Tool{
		Name:  ToolGraphQLQuery,
		Title: "GraphQL query",
		Description: "Run a GraphQL query against the engine's API with your key's permissions. The schema is " +
			"the graphql://schema resource. Operations are limited to 1000 complexity points (1 per field, " +
			"list fields multiplied by their limit); an operation over the limit is rejected with " +
			"COMPLEXITY_LIMIT_EXCEEDED before anything runs: lower the limits or select fewer fields. " +
			"Returns the GraphQL response ({data, errors}).",
		Annotations: readOnly("GraphQL query"),
	}, t.graphQLQuery)
}

// ResolveActorsInput is resolve_actors' arguments.
type ResolveActorsInput struct {
	IDs []string `json:"ids" jsonschema:"principal ids to resolve (user or service account ids), 1 to 100"`
}

// ActorJSON is one resolved principal.
type ActorJSON struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type" jsonschema:"user or service_account"`
}

// ResolveActorsOutput is resolve_actors' result.
type ResolveActorsOutput struct {
	Actors     []ActorJSON `json:"actors"`
	Unresolved []string    `json:"unresolved" jsonschema:"ids that name no user or service account"`
}

func (t *tools) resolveActors(ctx context.Context, _ *mcp.CallToolRequest, in ResolveActorsInput) (*mcp.CallToolResult, ResolveActorsOutput, error) {
	res, err := t.d.Actors.ResolveActors(ctx, in.IDs)
	if err != nil {
		return nil, ResolveActorsOutput{}, t.toolErr(ctx, ToolResolveActors, err)
	}
	out := ResolveActorsOutput{Actors: make([]ActorJSON, 0, len(res.Actors)), Unresolved: res.Unresolved}
	for _, a := range res.Actors {
		out.Actors = append(out.Actors, ActorJSON{ID: a.ID, Name: a.Name, Type: string(a.Type)})
	}
	if out.Unresolved == nil {
		out.Unresolved = []string{}
	}
	return nil, out, nil
}

// ThreadIDInput addresses one thread.
type ThreadIDInput struct {
	ThreadID string `json:"thread_id" jsonschema:"the thread id"`
}

// IntegrityOutput is verify_thread_integrity's result.
type IntegrityOutput struct {
	ThreadID     string     `json:"thread_id"`
	Verified     bool       `json:"verified"`
	TotalEvents  int        `json:"total_events" jsonschema:"number of recorded step attempts in the chain"`
	BrokenAt     *time.Time `json:"broken_at,omitempty" jsonschema:"recorded time of the first link that does not verify"`
	BrokenStepID string     `json:"broken_step_id,omitempty" jsonschema:"id of the first step attempt that does not verify"`
	Error        string     `json:"error,omitempty" jsonschema:"why verification failed"`
	VerifiedAt   time.Time  `json:"verified_at"`
}

// GraphQLQueryInput is graphql_query's arguments.
type GraphQLQueryInput struct {
	Query         string         `json:"query" jsonschema:"the GraphQL document"`
	Variables     map[string]any `json:"variables,omitempty" jsonschema:"values for the operation's variables"`
	OperationName string         `json:"operation_name,omitempty" jsonschema:"which operation to run when the document has several"`
}

// graphQLResponse is the part of a GraphQL response the tool inspects.
type graphQLResponse struct {
	Data   json.RawMessage   `json:"data"`
	Errors []json.RawMessage `json:"errors"`
}

func (t *tools) graphQLQuery(ctx context.Context, _ *mcp.CallToolRequest, in GraphQLQueryInput) (*mcp.CallToolResult, any, error) {
	if strings.TrimSpace(in.Query) == "" {
		return nil, nil, t.toolErr(ctx, ToolGraphQLQuery, invalidArg("query", "query is required"))
	}
	if len(in.Query) > maxQueryLen {
		return nil, nil, t.toolErr(ctx, ToolGraphQLQuery, domain.E(domain.KindTooLarge, domain.CodeBodyTooLarge,
			"query is longer than %d bytes", maxQueryLen))
	}
	raw, err := t.d.GraphQL(ctx, in.Query, in.OperationName, in.Variables)
	if err != nil {
		return nil, nil, t.toolErr(ctx, ToolGraphQLQuery, err)
	}
	var resp graphQLResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return nil, nil, t.toolErr(ctx, ToolGraphQLQuery, domain.Internal(err, "malformed GraphQL response"))
	}
	// A response with errors and no data is a failed operation (parse,
	// validation, complexity, permission): the agent must change its call.
	// Partial data with field errors is still a result worth reading.
	noData := len(resp.Data) == 0 || bytes.Equal(bytes.TrimSpace(resp.Data), []byte("null"))
	return &mcp.CallToolResult{
		IsError:           len(resp.Errors) > 0 && noData,
		Content:           []mcp.Content{&mcp.TextContent{Text: string(raw)}},
		StructuredContent: json.RawMessage(raw),
	}, nil, nil
}
