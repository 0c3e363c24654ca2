package domain

import (
	"errors"
	"fmt"
	"testing"
)

func TestKindHTTPStatus(t *testing.T) {
	t.Parallel()
	want := map[Kind]int{
		KindInvalid: 400, KindUnauthenticated: 401, KindForbidden: 403, KindNotFound: 404,
		KindMethodNotAllowed: 405, KindConflict: 409, KindTooLarge: 413, KindUnprocessable: 422,
		KindRateLimited: 429, KindUnavailable: 503, KindInternal: 500, KindUnsupportedMedia: 415,
	}
	if len(want) != len(Kinds()) {
		t.Fatalf("%d kinds, the test knows %d", len(Kinds()), len(want))
	}
	for _, k := range Kinds() {
		if got := k.HTTPStatus(); got != want[k] {
			t.Errorf("%s: %d, want %d", k, got, want[k])
		}
		if k != KindInternal && k.String() == "internal" {
			t.Errorf("kind %d has no name", k)
		}
	}
	if got := Kind(200).HTTPStatus(); got != 500 {
		t.Errorf("unknown kind: %d, want 500", got)
	}
}

func TestWithMethodsCopy(t *testing.T) {
	t.Parallel()
	orig := E(KindInvalid, CodeValidationFailed, "bad").WithDetail("a", 1)
	changed := orig.WithDetail("b", 2).WithField("f").WithMessage("worse %d", 2).WithCause(errors.New("why"))
	if len(orig.Details) != 1 || orig.Field != "" || orig.Message != "bad" || orig.Err != nil {
		t.Fatalf("original changed: %+v", orig)
	}
	if changed.Details["a"] != 1 || changed.Details["b"] != 2 || changed.Field != "f" || changed.Message != "worse 2" || changed.Err == nil {
		t.Fatalf("copy: %+v", changed)
	}
	if changed.Kind != KindInvalid || changed.Code != CodeValidationFailed {
		t.Fatalf("copy lost kind/code: %+v", changed)
	}
}

func TestBaseCannotBeChangedByItsUsers(t *testing.T) {
	t.Parallel()
	// Whatever one caller does with the error it got, the next caller sees
	// the base as declared.
	first := AsError(ErrForbidden)
	first.Message, first.Field = "changed", "changed"
	first.Details = map[string]any{"x": 1}
	_ = ErrForbidden.WithDetail("required", "threads.write").WithField("f")
	second := AsError(ErrForbidden)
	if second.Message != "you do not have permission to do this" || second.Field != "" || second.Details != nil {
		t.Fatalf("base changed through a user: %+v", second)
	}
	if second == first {
		t.Fatal("AsError of a base must return a fresh *Error")
	}
}

func TestErrorsIsMatchesBase(t *testing.T) {
	t.Parallel()
	wrapped := fmt.Errorf("loading: %w", ErrAPIKeyRevoked.WithDetail("id", "k1"))
	if !errors.Is(wrapped, ErrAPIKeyRevoked) {
		t.Fatal("an error made from a base must match it")
	}
	if errors.Is(wrapped, ErrAPIKeyExpired) {
		t.Fatal("must not match another base")
	}
	if !errors.Is(ErrAPIKeyRevoked, ErrAPIKeyRevoked) {
		t.Fatal("a base matches itself")
	}
	if errors.Is(E(KindUnauthenticated, CodeAPIKeyRevoked, "the API key has been revoked"), ErrAPIKeyRevoked) {
		t.Fatal("an error not made from the base does not match it")
	}
	de := AsError(fmt.Errorf("x: %w", ErrNotFound))
	if de.Kind != KindNotFound || de.Code != CodeNotFound || !errors.Is(de, ErrNotFound) {
		t.Fatalf("AsError of a wrapped base: %+v", de)
	}
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	codes := Codes()
	if len(codes) < 40 {
		t.Fatalf("only %d codes registered", len(codes))
	}
	for _, c := range codes {
		ks := KindsOf(c)
		if len(ks) == 0 {
			t.Errorf("%s has no kind", c)
		}
		for _, k := range ks {
			if !Registered(c, k) {
				t.Errorf("%s/%s not registered", c, k)
			}
		}
	}
	if Registered("nope", KindInternal) || KindsOf("nope") != nil {
		t.Fatal("unknown code registered")
	}
	// The domain's own bases use registered pairs.
	for _, b := range []*Base{ErrNotFound, ErrUnauthenticated, ErrForbidden, ErrAPIKeyRevoked, ErrAPIKeyExpired,
		ErrSessionExpired, ErrSessionRevoked, ErrUserNotActive, ErrActivationRequiresSignIn, ErrUserArchived, ErrLastActiveAdmin} {
		if !Registered(b.Code(), b.Kind()) {
			t.Errorf("base %s/%s is not registered", b.Code(), b.Kind())
		}
	}
}

func TestErrorsAsFindsBase(t *testing.T) {
	t.Parallel()
	var de *Error
	if !errors.As(fmt.Errorf("tx: %w", ErrLastActiveAdmin), &de) {
		t.Fatal("errors.As must find a base as *Error")
	}
	if de.Code != CodeLastActiveAdminRequired || de.Kind != KindConflict || !errors.Is(de, ErrLastActiveAdmin) {
		t.Fatalf("got %+v", de)
	}
	de.Message = "changed"
	if ErrLastActiveAdmin.Message() == "changed" {
		t.Fatal("the *Error errors.As gives is a copy")
	}
}
