// Package identity holds the user, API key and session use cases and the
// authentication every transport goes through.
package identity
