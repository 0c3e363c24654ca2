package limits

import (
	"context"
	"errors"
	"os"

	"github.com/threadengine/engine/domain"
)

type counterKey struct{}

// WithCounter carries c in ctx, for handlers that are plain http.Handlers
// (GraphQL, MCP) behind the server's middleware.
func WithCounter(ctx context.Context, c *Counter) context.Context {
	return context.WithValue(ctx, counterKey{}, c)
}

// FromContext is the counter WithCounter put in ctx (nil counts nothing).
func FromContext(ctx context.Context) *Counter {
	c, _ := ctx.Value(counterKey{}).(*Counter)
	return c
}

// BodyTimeout is the refusal of a request body that did not arrive within
// limits.http.read_timeout — 413 limit_exceeded naming http_read_timeout,
// counted on ctx's counter — when err (from reading the body) is the read
// deadline passing; nil for any other err.
func BodyTimeout(ctx context.Context, err error) error {
	if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		return nil
	}
	FromContext(ctx).Refused(HTTPReadTimeout)
	return domain.LimitExceeded(domain.KindTooLarge, string(HTTPReadTimeout),
		"the request body was not received within the server's read timeout")
}
