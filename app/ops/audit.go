package ops

import (
	"context"
	"encoding/base64"
	"strings"
	"time"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/readmodel"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Audit log page sizes.
const (
	DefaultAuditLimit = 50
	MaxAuditLimit     = 500
)

// AuditLog reads the audit log (administrators).
type AuditLog struct {
	store  ports.AuditReader
	actors *readmodel.Actors
}

// NewAuditLog builds the audit listing use case; actors names the users and
// service accounts that acted, so the log reads "Ada Lovelace" rather than a
// UUID.
func NewAuditLog(store ports.AuditReader, actors *readmodel.Actors) *AuditLog {
	if store == nil || actors == nil {
		panic("ops.NewAuditLog: missing dependency")
	}
	return &AuditLog{store: store, actors: actors}
}

// AuditQuery is one page request. Cursor is the NextCursor of the previous
// page ("" for the first).
type AuditQuery struct {
	Action, ActorID, Target string
	Since, Until            time.Time
	Cursor                  string
	Limit                   int
}

// AuditLine is one audit entry with its actor's name: the user's full name
// (else email) or the service account's name; "" when the actor is the
// engine itself or has since been deleted.
type AuditLine struct {
	ports.AuditEntry
	ActorName string
}

// AuditPage is one page, newest first; NextCursor is "" on the last page.
type AuditPage struct {
	Entries    []AuditLine
	NextCursor string
}

// List returns one page of audit lines. It needs audit.read.
func (a *AuditLog) List(ctx context.Context, q AuditQuery) (AuditPage, error) {
	if _, err := authz.Require(ctx, domain.PermAuditRead); err != nil {
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
	var page AuditPage
	if len(entries) > limit {
		entries = entries[:limit]
		last := entries[limit-1]
		page.NextCursor = encodeAuditCursor(ports.AuditCursor{At: last.At, ID: last.ID})
	}
	// One lookup per distinct actor on the page (at most MaxAuditLimit).
	// Readers of the audit log are administrators, who may read the user
	// list, so a user without a full name is shown by email.
	names := map[string]string{}
	page.Entries = make([]AuditLine, len(entries))
	for i, e := range entries {
		name, seen := names[e.ActorID]
		if !seen && e.ActorID != "" && e.ActorKind != domain.PrincipalSystem {
			act, ok, err := a.actors.Resolve(ctx, e.ActorID, true)
			if err != nil {
				return AuditPage{}, err
			}
			if ok {
				name = act.Name
			}
			names[e.ActorID] = name
		}
		page.Entries[i] = AuditLine{AuditEntry: e, ActorName: name}
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
