package otlp

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/threadengine/engine/adapters/httperr/httperrtest"
	"github.com/threadengine/engine/domain"
)

// Every refusal is the error's public view: the HTTP status and the gRPC
// code are its kind's, Retry-After is set when a retry may succeed, and an
// internal error is hidden and logged once.
func TestFailRendersThePublicView(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		err        error
		status     int
		grpc       int
		prefix     string
		retryAfter string
		logs       int
	}{
		{"internal", errors.New("pq: secret"), 500, 13, "internal: " + domain.InternalMessage, "", 1},
		{"unavailable", domain.E(domain.KindUnavailable, domain.CodeUnavailable, "the database is unavailable").WithRetryAfter(3 * time.Second),
			503, 14, "unavailable: the database", "3", 0},
		{"rate limited", domain.LimitExceeded(domain.KindRateLimited, "otlp_concurrent", "busy"), 429, 8, "limit_exceeded: busy", "1", 0},
		{"forbidden", domain.ErrForbidden, 403, 7, "forbidden: ", "", 0},
		{"conflict", domain.E(domain.KindConflict, domain.CodeThreadClosed, "closed"), 409, 9, "thread_closed: closed", "", 0},
	}
	for _, c := range cases {
		for _, asJSON := range []bool{true, false} {
			logs := httperrtest.NewLogs()
			h := &Handler{Log: logs.Logger()}
			w := httptest.NewRecorder()
			if err := h.fail(echo.New().NewContext(httptest.NewRequest(http.MethodPost, "/v1/traces", nil), w), asJSON, c.err); err != nil {
				t.Fatal(err)
			}
			var code int
			var msg string
			if asJSON {
				code, msg = statusJSON(t, w)
			} else {
				code, msg = statusProto(t, w.Body.Bytes())
			}
			if w.Code != c.status || code != c.grpc || !strings.HasPrefix(msg, c.prefix) || w.Header().Get("Retry-After") != c.retryAfter {
				t.Errorf("%s (json %v): %d %d %q Retry-After %q", c.name, asJSON, w.Code, code, msg, w.Header().Get("Retry-After"))
			}
			if n := len(logs.Mentioning(slog.LevelError, "secret")); n != c.logs || strings.Contains(msg, "secret") {
				t.Errorf("%s: logged %d times (%q answered), want %d", c.name, n, msg, c.logs)
			}
		}
	}
}

func TestUnsupportedMediaType(t *testing.T) {
	t.Parallel()
	w := serve(&Handler{}, domain.RoleMember, http.NoBody, map[string]string{"Content-Type": "text/plain"})
	if code, msg := statusProto(t, w.Body.Bytes()); w.Code != http.StatusUnsupportedMediaType || code != 3 || !strings.HasPrefix(msg, "unsupported_media_type: ") {
		t.Errorf("text/plain: %d %d %q", w.Code, code, msg)
	}
}

// statusProto reads google.rpc.Status's code and message.
func statusProto(t *testing.T, b []byte) (code int, msg string) {
	t.Helper()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad status %x", b)
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			code, b = int(v), b[m:]
		case num == 2 && typ == protowire.BytesType:
			v, m := protowire.ConsumeString(b)
			msg, b = v, b[m:]
		default:
			t.Fatalf("unexpected field %d", num)
		}
	}
	return code, msg
}
