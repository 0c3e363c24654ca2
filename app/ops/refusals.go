package ops

import (
	"context"
	"encoding/base64"
	"strings"
	"time"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Page sizes of the refusal log.
const (
	DefaultRefusalLimit = 100
	MaxRefusalLimit     = 1000
)

// StepRefusals reads the log of refused step submissions (GET
// /v1/refusals): who tried which step with what, when, and which content
// rule refused it. Like the audit log it needs audit.read (administrators).
type StepRefusals struct {
	store ports.RefusalReader
}

// NewStepRefusals reads refusals from store.
func NewStepRefusals(store ports.RefusalReader) *StepRefusals { return &StepRefusals{store: store} }

// RefusalQuery selects one page, newest first.
type RefusalQuery struct {
	ThreadID string
	Contract string
	Cursor   string
	Limit    int
}

// RefusalPage is one page; NextCursor is "" on the last.
type RefusalPage struct {
	Refusals   []ports.StepRefusal
	NextCursor string
}

// List returns one page of refusals.
func (r *StepRefusals) List(ctx context.Context, q RefusalQuery) (RefusalPage, error) {
	if _, err := authz.Require(ctx, domain.PermAuditRead); err != nil {
		return RefusalPage{}, err
	}
	limit := q.Limit
	switch {
	case limit == 0:
		limit = DefaultRefusalLimit
	case limit < 0 || limit > MaxRefusalLimit:
		return RefusalPage{}, domain.Invalid("limit", "limit must be between 1 and %d", MaxRefusalLimit)
	}
	f := ports.RefusalFilter{ThreadID: q.ThreadID, Contract: q.Contract, Limit: limit + 1}
	if q.Cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(q.Cursor)
		at, id, ok := strings.Cut(string(b), "|")
		t, err2 := time.Parse(time.RFC3339Nano, at)
		if err != nil || err2 != nil || !ok || id == "" {
			return RefusalPage{}, domain.Invalid("cursor", "cursor is not one this endpoint returned")
		}
		f.Before, f.BeforeID = t, id
	}
	rows, err := r.store.ListRefusals(ctx, f)
	if err != nil {
		return RefusalPage{}, err
	}
	var page RefusalPage
	if len(rows) > limit {
		rows = rows[:limit]
		last := rows[limit-1]
		page.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(last.CreatedAt.UTC().Format(time.RFC3339Nano) + "|" + last.ID))
	}
	page.Refusals = rows
	if page.Refusals == nil {
		page.Refusals = []ports.StepRefusal{}
	}
	return page, nil
}
