// Package readgate admits reads (GraphQL, MCP, exports): a bounded number at once, per principal and in all, a token bucket of cost points per principal, and a share of the time for expensive reads, refusing with a coded error rather than queueing without end.
package readgate
