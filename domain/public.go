package domain

import "time"

// InternalMessage is the whole public message of an internal error.
const InternalMessage = "an internal error occurred"

// PublicError is what a caller may see of an error: the one view every
// transport renders (REST problem+json, GraphQL extensions, WebSocket error
// replies, MCP tool errors, OTLP google.rpc.Status), after Grafana errutil's
// Public and upspin's errors.E. Nothing in it comes from an error's cause.
type PublicError struct {
	Kind Kind
	// Status is the kind's HTTP status (the kinds table); GRPCCode its
	// gRPC status code.
	Status   int
	GRPCCode int
	Code     Code
	Message  string
	Field    string
	// Details are public extras (e.g. "limit" naming a limit); a copy the
	// renderer may change.
	Details map[string]any
	// RetryAfter is positive when retrying later may succeed (unavailable,
	// rate limited): how long to wait first.
	RetryAfter time.Duration
	// Internal: the error is hidden behind a generic message; the transport
	// logs the real error, once, with its request's context.
	Internal bool
}

// Public is err's public view. An error that is not a *Error (or *Base),
// and every error of kind internal or of an unknown kind, is internal:
// code internal, a generic message, no field or details.
func Public(err error) PublicError {
	if err == nil {
		return PublicError{}
	}
	de := AsError(err)
	k := de.Kind.known()
	if k == KindInternal {
		return PublicError{Kind: KindInternal, Status: k.HTTPStatus(), GRPCCode: k.GRPCCode(), Code: CodeInternal,
			Message: InternalMessage, Internal: true}
	}
	p := PublicError{Kind: k, Status: k.HTTPStatus(), GRPCCode: k.GRPCCode(), Code: de.Code, Message: de.Message,
		Field: de.Field, RetryAfter: k.RetryAfter()}
	if k.RetryAfter() > 0 && de.RetryAfter > 0 {
		p.RetryAfter = de.RetryAfter
	}
	if len(de.Details) > 0 {
		p.Details = make(map[string]any, len(de.Details))
		for key, v := range de.Details {
			p.Details[key] = v
		}
	}
	return p
}

// Retryable reports whether the caller may retry the same request later.
func (p PublicError) Retryable() bool { return p.RetryAfter > 0 }

// RetryAfterSeconds is RetryAfter in whole seconds, rounded up (HTTP's
// Retry-After counts seconds); 0 when the error is not retryable.
func (p PublicError) RetryAfterSeconds() int {
	if p.RetryAfter <= 0 {
		return 0
	}
	return int((p.RetryAfter + time.Second - 1) / time.Second)
}

// RetryAfterMillis is RetryAfter in milliseconds, rounded up; 0 when the
// error is not retryable.
func (p PublicError) RetryAfterMillis() int64 {
	if p.RetryAfter <= 0 {
		return 0
	}
	return int64((p.RetryAfter + time.Millisecond - 1) / time.Millisecond)
}
