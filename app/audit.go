package app

import (
	"context"
	"encoding/base64"
	"strings"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Audit log page sizes.
const (
	DefaultAuditLimit = 50
	MaxAuditLimit     = 500
)

// AuditLog reads the audit log (administrators).
type AuditLog struct{ store ports.AuditReader }

// NewAuditLog builds the audit listing use case.
func NewAuditLog(store ports.AuditReader) *AuditLog { return &AuditLog{store: store} }

// AuditQuery is one page request. Cursor is the NextCursor of the previous
// page ("" for the first).
type AuditQuery struct {
	Action, ActorID, Target string
	Since, Until            time.Time
	Cursor                  string
	Limit                   int
}

// AuditPage is one page, newest first; NextCursor is "" on the last page.
type AuditPage struct {
	Entries    []ports.AuditEntry
	NextCursor string
}

// List returns one page of audit lines. It needs audit.read.
func (a *AuditLog) List(ctx context.Context, q AuditQuery) (AuditPage, error) {
	if _, err := Require(ctx, domain.PermAuditRead); err != nil {
		return AuditPage{}, err
	}
	limit := q.Limit
	switch {
	case limit == 0:
		limit = DefaultAuditLimit
	case limit < 0 || limit > MaxAuditLimit:
		return AuditPage{}, domain.Invalid("limit", "limit must be between 1 and %d", MaxAuditLimit)
	}
	f := ports.AuditFilter{Action: q.Action, ActorID: q.ActorID, Target: q.Target, Since: q.Since, Until: q.Until, Limit: limit + 1}
	if q.Cursor != "" {
		c, err := decodeAuditCursor(q.Cursor)
		if err != nil {
			return AuditPage{}, err
		}
		f.After = &c
	}
	entries, err := a.store.ListAudit(ctx, f)
	if err != nil {
		return AuditPage{}, err
	}
	page := AuditPage{Entries: entries}
	if len(entries) > limit {
		page.Entries = entries[:limit]
		last := page.Entries[limit-1]
		page.NextCursor = encodeAuditCursor(ports.AuditCursor{At: last.At, ID: last.ID})
	}
	return page, nil
}

// The cursor is opaque to clients: base64url of "<RFC 3339 nano time> <id>".
func encodeAuditCursor(c ports.AuditCursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(c.At.UTC().Format(time.RFC3339Nano) + " " + c.ID))
}

func decodeAuditCursor(s string) (ports.AuditCursor, error) {
	bad := domain.Invalid("cursor", "cursor is not one this engine returned")
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return ports.AuditCursor{}, bad
	}
	ts, id, ok := strings.Cut(string(raw), " ")
	if !ok || id == "" {
		return ports.AuditCursor{}, bad
	}
	at, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return ports.AuditCursor{}, bad
	}
	return ports.AuditCursor{At: at, ID: id}, nil
}
