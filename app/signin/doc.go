// Package signin decides who may sign in through the identity registry
// (OIDC) and keeps the registry license's latest check.
package signin
