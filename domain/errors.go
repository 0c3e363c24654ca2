package domain

import (
	"errors"
	"fmt"
	"time"
)

// Kind classifies an error by what the caller can do about it. Each kind has
// one HTTP status, one gRPC status code and, for the kinds a caller may
// retry, a default retry delay (the kinds table below); every transport
// renders an error through Public, which reads that table. Values are never
// reordered; new kinds go at the end.
type Kind uint8

const (
	KindInternal         Kind = iota // a bug or an unexpected failure; details stay in logs
	KindInvalid                      // the request is malformed or fails validation
	KindNotFound                     // the addressed thing does not exist (or is not visible)
	KindConflict                     // the request clashes with the current state
	KindUnauthenticated              // no valid credential
	KindForbidden                    // authenticated, but not allowed
	KindUnavailable                  // a dependency is down; retrying later may work
	KindTooLarge                     // a body, frame or query exceeds a size limit
	KindUnprocessable                // well-formed but refused by a policy (e.g. complexity)
	KindRateLimited                  // too many requests
	KindMethodNotAllowed             // the route exists, but not for this HTTP method
	KindUnsupportedMedia             // the body's media type (Content-Type) is not one the route reads
)

// gRPC status codes (google.golang.org/grpc/codes, by number: domain
// imports no transport), for transports that answer google.rpc.Status.
const (
	grpcInvalidArgument    = 3
	grpcNotFound           = 5
	grpcPermissionDenied   = 7
	grpcResourceExhausted  = 8
	grpcFailedPrecondition = 9
	grpcUnimplemented      = 12
	grpcInternal           = 13
	grpcUnavailable        = 14
	grpcUnauthenticated    = 16
)

// retryDelay is the delay a caller is told to wait before retrying an error
// of a retryable kind that names none itself (Error.RetryAfter).
const retryDelay = time.Second

// kinds is the one table from kind to name, HTTP status (the numbers of
// net/http's Status constants: domain imports no transport), gRPC status
// code and default retry delay (zero: retrying the same request will not
// help).
var kinds = [...]struct {
	name       string
	status     int
	grpc       int
	retryAfter time.Duration
}{
	KindInternal:         {"internal", 500, grpcInternal, 0},
	KindInvalid:          {"invalid", 400, grpcInvalidArgument, 0},
	KindNotFound:         {"not_found", 404, grpcNotFound, 0},
	KindConflict:         {"conflict", 409, grpcFailedPrecondition, 0},
	KindUnauthenticated:  {"unauthenticated", 401, grpcUnauthenticated, 0},
	KindForbidden:        {"forbidden", 403, grpcPermissionDenied, 0},
	KindUnavailable:      {"unavailable", 503, grpcUnavailable, retryDelay},
	KindTooLarge:         {"too_large", 413, grpcResourceExhausted, 0},
	KindUnprocessable:    {"unprocessable", 422, grpcInvalidArgument, 0},
	KindRateLimited:      {"rate_limited", 429, grpcResourceExhausted, retryDelay},
	KindMethodNotAllowed: {"method_not_allowed", 405, grpcUnimplemented, 0},
	KindUnsupportedMedia: {"unsupported_media_type", 415, grpcInvalidArgument, 0},
}

// Kinds lists every kind, in declaration order.
func Kinds() []Kind {
	out := make([]Kind, len(kinds))
	for i := range kinds {
		out[i] = Kind(i)
	}
	return out
}

func (k Kind) String() string {
	if int(k) < len(kinds) {
		return kinds[k].name
	}
	return kinds[KindInternal].name
}

// HTTPStatus is the kind's HTTP status; an unknown kind is internal (500).
func (k Kind) HTTPStatus() int { return kinds[k.known()].status }

// GRPCCode is the kind's gRPC status code (google.rpc.Status.code, as
// OTLP answers it); an unknown kind is internal (13).
func (k Kind) GRPCCode() int { return kinds[k.known()].grpc }

// RetryAfter is how long a caller should wait before retrying an error of
// this kind when the error names no delay itself; zero for the kinds where
// retrying the same request will not help.
func (k Kind) RetryAfter() time.Duration { return kinds[k.known()].retryAfter }

// known is k, or KindInternal for a kind outside the table.
func (k Kind) known() Kind {
	if int(k) < len(kinds) {
		return k
	}
	return KindInternal
}

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
	// RetryAfter, when positive, is how long the caller should wait before
	// retrying (else the kind's default, Kind.RetryAfter).
	RetryAfter time.Duration
	Err        error

	// base is the package-level Base this error was made from, for Is.
	base *Base
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
	return E(KindInvalid, CodeValidationFailed, msg, args...).WithField(field)
}

// Internal wraps an unexpected failure; the cause is kept for logs only.
func Internal(err error, msg string) *Error {
	return &Error{Kind: KindInternal, Code: CodeInternal, Message: msg, Err: err}
}

// LimitExceeded is a refusal by the named limit (kind TooLarge for sizes and
// counts, RateLimited for concurrency caps).
func LimitExceeded(kind Kind, limit string, msg string, args ...any) *Error {
	return E(kind, CodeLimitExceeded, msg, args...).WithDetail("limit", limit)
}

// The With methods return a changed copy and leave e alone: an error that is
// shared (held in a variable, returned to several callers) can never be
// changed by one of them.

// clone copies e, with a Details map of its own.
func (e *Error) clone() *Error {
	c := *e
	if e.Details != nil {
		c.Details = make(map[string]any, len(e.Details)+1)
		for k, v := range e.Details {
			c.Details[k] = v
		}
	}
	return &c
}

// WithDetail returns a copy of e with one more public detail.
func (e *Error) WithDetail(key string, v any) *Error {
	c := e.clone()
	if c.Details == nil {
		c.Details = map[string]any{}
	}
	c.Details[key] = v
	return c
}

// WithField returns a copy of e naming the offending input field.
func (e *Error) WithField(field string) *Error {
	c := e.clone()
	c.Field = field
	return c
}

// WithMessage returns a copy of e with another public message (fmt verbs
// with args).
func (e *Error) WithMessage(msg string, args ...any) *Error {
	c := e.clone()
	if len(args) > 0 {
		msg = fmt.Sprintf(msg, args...)
	}
	c.Message = msg
	return c
}

// WithCause returns a copy of e that wraps cause (for logs only).
func (e *Error) WithCause(cause error) *Error {
	c := e.clone()
	c.Err = cause
	return c
}

// WithRetryAfter returns a copy of e telling the caller to retry after d.
func (e *Error) WithRetryAfter(d time.Duration) *Error {
	c := e.clone()
	c.RetryAfter = d
	return c
}

// Is reports whether e was made from target when target is a *Base, so
// errors.Is(err, domain.ErrNotFound) holds for every error made from that
// base, whatever was changed with the With methods.
func (e *Error) Is(target error) bool {
	b, ok := target.(*Base)
	return ok && e.base == b
}

// Base is a package-level error, after Grafana's errutil.Base: a kind, a
// code and a message that no caller can change (its fields are unexported
// and every method returns a new *Error). Return the base itself as an
// error, or derive a detailed one with its With methods.
type Base struct {
	kind    Kind
	code    Code
	message string
}

// NewBase declares a package-level error. msg may use fmt verbs with args.
func NewBase(kind Kind, code Code, msg string, args ...any) *Base {
	if len(args) > 0 {
		msg = fmt.Sprintf(msg, args...)
	}
	return &Base{kind: kind, code: code, message: msg}
}

// New returns a fresh *Error made from b.
func (b *Base) New() *Error {
	return &Error{Kind: b.kind, Code: b.code, Message: b.message, base: b}
}

func (b *Base) Error() string { return b.New().Error() }

// As lets errors.As(err, &de) with de a *Error find a base too (as a fresh
// *Error), so code that looks for *Error needs no second case.
func (b *Base) As(target any) bool {
	if p, ok := target.(**Error); ok {
		*p = b.New()
		return true
	}
	return false
}

// Kind of the errors made from b.
func (b *Base) Kind() Kind { return b.kind }

// Code of the errors made from b.
func (b *Base) Code() Code { return b.code }

// Message of the errors made from b.
func (b *Base) Message() string { return b.message }

// WithDetail returns a new *Error made from b with one public detail.
func (b *Base) WithDetail(key string, v any) *Error { return b.New().WithDetail(key, v) }

// WithField returns a new *Error made from b naming the input field.
func (b *Base) WithField(field string) *Error { return b.New().WithField(field) }

// WithMessage returns a new *Error made from b with another message.
func (b *Base) WithMessage(msg string, args ...any) *Error { return b.New().WithMessage(msg, args...) }

// WithCause returns a new *Error made from b that wraps cause.
func (b *Base) WithCause(cause error) *Error { return b.New().WithCause(cause) }

// WithRetryAfter returns a new *Error made from b that tells the caller to
// retry after d.
func (b *Base) WithRetryAfter(d time.Duration) *Error { return b.New().WithRetryAfter(d) }

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
	ErrNotFound        = NewBase(KindNotFound, CodeNotFound, "not found")
	ErrUnauthenticated = NewBase(KindUnauthenticated, CodeUnauthenticated, "authentication required")
	ErrForbidden       = NewBase(KindForbidden, CodeForbidden, "you do not have permission to do this")
)

// NotFound names what was not found.
func NotFound(what string) *Error {
	return E(KindNotFound, CodeNotFound, "%s not found", what)
}

// Forbidden explains which permission was missing.
func Forbidden(msg string, args ...any) *Error {
	return E(KindForbidden, CodeForbidden, msg, args...)
}
