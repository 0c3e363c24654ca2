package domain

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
)

var errQuota = NewBase(KindRateLimited, CodeRateLimited, "too many requests")

func TestPublic(t *testing.T) {
	t.Parallel()
	cause := errors.New("pq: password=secret dial tcp 10.0.0.1:5432")
	internal := PublicError{Kind: KindInternal, Status: 500, GRPCCode: 13, Code: CodeInternal, Message: InternalMessage, Internal: true}
	cases := []struct {
		name string
		err  error
		want PublicError
	}{
		{"nil", nil, PublicError{}},
		{"foreign error", cause, internal},
		{"wrapped foreign error", fmt.Errorf("store: %w", cause), internal},
		{"internal kind keeps nothing", Internal(cause, "the hash of row 7 is wrong").WithField("x").WithDetail("row", 7), internal},
		{"unknown kind", &Error{Kind: Kind(200), Code: CodeNotFound, Message: "m"}, internal},
		{"invalid", Invalid("email", "bad email").WithCause(cause),
			PublicError{Kind: KindInvalid, Status: 400, GRPCCode: 3, Code: CodeValidationFailed, Message: "bad email", Field: "email"}},
		{"details", Forbidden("no").WithDetail("required", "users.manage"),
			PublicError{Kind: KindForbidden, Status: 403, GRPCCode: 7, Code: CodeForbidden, Message: "no", Details: map[string]any{"required": "users.manage"}}},
		{"base", ErrNotFound, PublicError{Kind: KindNotFound, Status: 404, GRPCCode: 5, Code: CodeNotFound, Message: "not found"}},
		{"wrapped base", fmt.Errorf("x: %w", ErrUnauthenticated),
			PublicError{Kind: KindUnauthenticated, Status: 401, GRPCCode: 16, Code: CodeUnauthenticated, Message: "authentication required"}},
		{"conflict", E(KindConflict, CodeThreadClosed, "closed"),
			PublicError{Kind: KindConflict, Status: 409, GRPCCode: 9, Code: CodeThreadClosed, Message: "closed"}},
		{"unavailable: default delay", E(KindUnavailable, CodeUnavailable, "down").WithCause(cause),
			PublicError{Kind: KindUnavailable, Status: 503, GRPCCode: 14, Code: CodeUnavailable, Message: "down", RetryAfter: time.Second}},
		{"unavailable: its own delay", E(KindUnavailable, CodeUnavailable, "down").WithRetryAfter(3 * time.Second),
			PublicError{Kind: KindUnavailable, Status: 503, GRPCCode: 14, Code: CodeUnavailable, Message: "down", RetryAfter: 3 * time.Second}},
		{"rate limited base", errQuota.WithRetryAfter(2500 * time.Millisecond),
			PublicError{Kind: KindRateLimited, Status: 429, GRPCCode: 8, Code: CodeRateLimited, Message: "too many requests", RetryAfter: 2500 * time.Millisecond}},
		{"limit: too large is not retryable", LimitExceeded(KindTooLarge, "ws_message_bytes", "big").WithRetryAfter(time.Second),
			PublicError{Kind: KindTooLarge, Status: 413, GRPCCode: 8, Code: CodeLimitExceeded, Message: "big", Details: map[string]any{"limit": "ws_message_bytes"}}},
		{"media type", E(KindUnsupportedMedia, CodeUnsupportedMediaType, "use JSON"),
			PublicError{Kind: KindUnsupportedMedia, Status: 415, GRPCCode: 3, Code: CodeUnsupportedMediaType, Message: "use JSON"}},
	}
	for _, c := range cases {
		if got := Public(c.err); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

// The view's details are a copy: a renderer adding members cannot change
// an error other requests share.
func TestPublicDetailsAreACopy(t *testing.T) {
	t.Parallel()
	shared := LimitExceeded(KindTooLarge, "body", "big")
	p := Public(shared)
	p.Details["extra"] = 1
	if len(shared.Details) != 1 {
		t.Fatalf("shared error changed: %v", shared.Details)
	}
}

// Every kind has a status, a gRPC code and a retry rule in the one table;
// exactly unavailable and rate limited are retryable.
func TestKindTable(t *testing.T) {
	t.Parallel()
	grpc := map[Kind]int{
		KindInternal: 13, KindInvalid: 3, KindNotFound: 5, KindConflict: 9, KindUnauthenticated: 16,
		KindForbidden: 7, KindUnavailable: 14, KindTooLarge: 8, KindUnprocessable: 3, KindRateLimited: 8,
		KindMethodNotAllowed: 12, KindUnsupportedMedia: 3,
	}
	if len(grpc) != len(Kinds()) {
		t.Fatalf("%d kinds, the test knows %d", len(Kinds()), len(grpc))
	}
	for _, k := range Kinds() {
		if got := k.GRPCCode(); got != grpc[k] {
			t.Errorf("%s: gRPC %d, want %d", k, got, grpc[k])
		}
		retryable := k == KindUnavailable || k == KindRateLimited
		if (k.RetryAfter() > 0) != retryable {
			t.Errorf("%s: retry after %v", k, k.RetryAfter())
		}
	}
	if Kind(200).GRPCCode() != 13 || Kind(200).RetryAfter() != 0 {
		t.Error("an unknown kind must read as internal")
	}
}

func TestRetryAfterUnits(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		d      time.Duration
		s      int
		millis int64
	}{
		{0, 0, 0}, {time.Millisecond, 1, 1}, {time.Second, 1, 1000}, {1500 * time.Millisecond, 2, 1500}, {1100 * time.Microsecond, 1, 2},
	} {
		p := PublicError{RetryAfter: c.d}
		if p.RetryAfterSeconds() != c.s || p.RetryAfterMillis() != c.millis || p.Retryable() != (c.d > 0) {
			t.Errorf("%v: %ds %dms", c.d, p.RetryAfterSeconds(), p.RetryAfterMillis())
		}
	}
}
