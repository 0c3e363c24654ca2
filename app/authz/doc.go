// Package authz carries the authenticated caller in a context and checks
// what it may do; every use case starts with Require.
package authz
