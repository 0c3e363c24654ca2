// Package readmodel is the read side behind GraphQL and MCP: one handler per
// read use case (per-field batch loaders over threads, steps, validations
// and the hash chain, the thread detail, statistics), each over the narrow
// port it reads and through the caller's Scope, plus actor names and exports.
package readmodel
