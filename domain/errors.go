package domain

import (
	"errors"
	"fmt"
)

// Kind classifies an error by what the caller can do about it. Adapters map a
// Kind to a transport status exactly once (HTTP status, GraphQL code, WS reply).
// Values are never reordered; new kinds go at the end.
type Kind uint8

const (
	KindInternal        Kind = iota // a bug or an unexpected failure; details stay in logs
	KindInvalid                     // the request is malformed or fails validation
	KindNotFound                    // the addressed thing does not exist (or is not visible)
	KindConflict                    // the request clashes with the current state
	KindUnauthenticated             // no valid credential
	KindForbidden                   // authenticated, but not allowed
	KindUnavailable                 // a dependency is down; retrying later may work
	KindTooLarge                    // a body, frame or query exceeds a size limit
	KindUnprocessable               // well-formed but refused by a policy (e.g. complexity)
	KindRateLimited                 // too many requests
)

func (k Kind) String() string {
	switch k {
	case KindInvalid:
		return "invalid"
	case KindNotFound:
		return "not_found"
	case KindConflict:
		return "conflict"
	case KindUnauthenticated:
		return "unauthenticated"
	case KindForbidden:
		return "forbidden"
	case KindUnavailable:
		return "unavailable"
	case KindTooLarge:
		return "too_large"
	case KindUnprocessable:
		return "unprocessable"
	case KindRateLimited:
		return "rate_limited"
	default:
		return "internal"
	}
}

// Code is a stable, machine-readable error identifier. Clients match on it,
// so a published code never changes meaning.
type Code string

const (
	CodeInternal                 Code = "internal"
	CodeValidationFailed         Code = "validation_failed"
	CodeNotFound                 Code = "not_found"
	CodeUnauthenticated          Code = "unauthenticated"
	CodeForbidden                Code = "forbidden"
	CodeEmailTaken               Code = "email_taken"
	CodeLastActiveAdminRequired  Code = "last_active_admin_required"
	CodeInvalidStatusTransition  Code = "invalid_status_transition"
	CodeActivationRequiresSignIn Code = "activation_requires_sign_in"
	CodeAPIKeyRevoked            Code = "api_key_revoked"
	CodeAPIKeyExpired            Code = "api_key_expired"
	CodeSessionExpired           Code = "session_expired"
	CodeSessionRevoked           Code = "session_revoked"
	CodeUserNotActive            Code = "user_not_active"
	CodeOriginDenied             Code = "origin_denied"
	CodeBodyTooLarge             Code = "body_too_large"
	CodeUnavailable              Code = "unavailable"
	CodeRateLimited              Code = "rate_limited"
	CodeComplexityLimitExceeded  Code = "COMPLEXITY_LIMIT_EXCEEDED"
	CodeInvalidTransition        Code = "invalid_transition"
	CodeInvalidContract          Code = "invalid_contract"
	CodeThreadClosed             Code = "thread_closed"
)

// Error is the one error type that crosses layers. Message is safe to show to
// the caller; Err (the cause) is for logs only.
type Error struct {
	Kind    Kind
	Code    Code
	Message string
	// Field names the offending input field, when there is one.
	Field string
	// Details carries structured, public extras (e.g. every contract problem).
	Details map[string]any
	Err     error
}

func (e *Error) Error() string {
	msg := string(e.Code) + ": " + e.Message
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// E builds an Error. msg may use fmt verbs with args.
func E(kind Kind, code Code, msg string, args ...any) *Error {
	if len(args) > 0 {
		msg = fmt.Sprintf(msg, args...)
	}
	return &Error{Kind: kind, Code: code, Message: msg}
}

// Invalid is a validation failure tied to one input field.
func Invalid(field, msg string, args ...any) *Error {
	e := E(KindInvalid, CodeValidationFailed, msg, args...)
	e.Field = field
	return e
}

// Internal wraps an unexpected failure; the cause is kept for logs only.
func Internal(err error, msg string) *Error {
	return &Error{Kind: KindInternal, Code: CodeInternal, Message: msg, Err: err}
}

// WithDetail returns e with one more public detail.
func (e *Error) WithDetail(key string, v any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = v
	return e
}

// AsError extracts a *Error from err, wrapping unknown errors as internal.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var de *Error
	if errors.As(err, &de) {
		return de
	}
	return Internal(err, "an internal error occurred")
}

// KindOf returns the Kind of err (KindInternal for foreign errors).
func KindOf(err error) Kind { return AsError(err).Kind }

// CodeOf returns the Code of err ("" for nil).
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	return AsError(err).Code
}

// Common errors shared by several use cases.
var (
	ErrNotFound        = E(KindNotFound, CodeNotFound, "not found")
	ErrUnauthenticated = E(KindUnauthenticated, CodeUnauthenticated, "authentication required")
	ErrForbidden       = E(KindForbidden, CodeForbidden, "you do not have permission to do this")
)

// NotFound names what was not found.
func NotFound(what string) *Error {
	return E(KindNotFound, CodeNotFound, "%s not found", what)
}

// Forbidden explains which permission was missing.
func Forbidden(msg string, args ...any) *Error {
	return E(KindForbidden, CodeForbidden, msg, args...)
}
