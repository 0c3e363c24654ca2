// Package readmodel is the read side behind GraphQL and MCP: per-field
// batch loaders over threads, steps, validations and the hash chain, read
// through the caller's scope, plus statistics, actor names and exports.
package readmodel
