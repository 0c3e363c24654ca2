package mcpapi

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SchemaURI names the GraphQL schema resource.
const SchemaURI = "graphql://schema"

func addSchemaResource(s *mcp.Server, sdl string) {
	s.AddResource(&mcp.Resource{
		URI:         SchemaURI,
		Name:        "graphql-schema",
		Title:       "threadengine GraphQL schema",
		Description: "The SDL of the GraphQL API, for writing graphql_query operations.",
		MIMEType:    "application/graphql",
		Size:        int64(len(sdl)),
	}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		if req.Params.URI != SchemaURI {
			return nil, mcp.ResourceNotFoundError(req.Params.URI)
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
			URI: SchemaURI, MIMEType: "application/graphql", Text: sdl,
		}}}, nil
	})
}
