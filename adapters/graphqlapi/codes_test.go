package graphqlapi

import (
	"testing"

	"github.com/threadengine/engine/domain"
)

// Every kind has a GraphQL code and the kind's own HTTP status; conflict and
// rate limiting used to fall through to INTERNAL_SERVER_ERROR/500.
func TestCodeOfEveryKind(t *testing.T) {
	t.Parallel()
	want := map[domain.Kind]string{
		domain.KindInvalid: "BAD_USER_INPUT", domain.KindNotFound: "NOT_FOUND", domain.KindConflict: "CONFLICT",
		domain.KindUnauthenticated: "UNAUTHENTICATED", domain.KindForbidden: "FORBIDDEN",
		domain.KindUnavailable: "SERVICE_UNAVAILABLE", domain.KindTooLarge: "QUERY_TOO_LARGE",
		domain.KindUnprocessable: "COMPLEXITY_LIMIT_EXCEEDED", domain.KindRateLimited: "RATE_LIMITED",
		domain.KindInternal: "INTERNAL_SERVER_ERROR", domain.KindMethodNotAllowed: "INTERNAL_SERVER_ERROR",
	}
	for _, k := range domain.Kinds() {
		code, status := codeOf(k)
		if code != want[k] {
			t.Errorf("%s: code %s, want %s", k, code, want[k])
		}
		wantStatus := k.HTTPStatus()
		if code == CodeInternal {
			wantStatus = 500
		}
		if status != wantStatus {
			t.Errorf("%s: status %d, want %d", k, status, wantStatus)
		}
	}
}
