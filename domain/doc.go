// Package domain holds threadengine's business rules: the user status state
// machine, the last-active-admin invariant, API key and session validity,
// contract validation, the hash chain and the GraphQL complexity calculator.
//
// It is pure: no I/O, no framework imports, no clock reads. Callers pass the
// current time and randomness in, so every rule is testable with a table.
package domain
