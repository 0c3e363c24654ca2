// Package schema holds the GraphQL schema of the query API, embedded so the
// binary serves exactly the schema it was built with.
package schema

import _ "embed"

// GraphQL is the schema (SDL) of POST /graphql.
//
//go:embed threadengine.graphqls
var GraphQL string
