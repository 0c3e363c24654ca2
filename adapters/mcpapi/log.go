package mcpapi

import (
	"context"
	"log/slog"
)

// quietHandler demotes the SDK's Info records to Debug. In stateless mode the
// SDK connects and disconnects a session for every HTTP request and logs each
// step at Info, which would repeat the request log several times over.
type quietHandler struct{ slog.Handler }

func sdkLogger(l *slog.Logger) *slog.Logger { return slog.New(quietHandler{l.Handler()}) }

func demote(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}

func (h quietHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, demote(l))
}

func (h quietHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demote(r.Level)
	return h.Handler.Handle(ctx, r)
}

func (h quietHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return quietHandler{h.Handler.WithAttrs(as)}
}

func (h quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{h.Handler.WithGroup(name)}
}
