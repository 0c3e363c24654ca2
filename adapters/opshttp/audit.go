package opshttp

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/app/ops"
	"github.com/threadengine/engine/domain"
)

// AuditEntryJSON is one audit line.
type AuditEntryJSON struct {
	ID        string    `json:"id"`
	At        time.Time `json:"at"`
	ActorKind string    `json:"actor_kind"`
	ActorID   string    `json:"actor_id"`
	// ActorName is the user's full name (else email) or the service
	// account's name; empty for the engine itself or a deleted actor.
	ActorName string         `json:"actor_name,omitempty"`
	Action    string         `json:"action"`
	Target    string         `json:"target"`
	Details   map[string]any `json:"details"`
}

// AuditPageJSON is the body of GET /v1/audit.
type AuditPageJSON struct {
	Entries    []AuditEntryJSON `json:"entries"`
	NextCursor string           `json:"next_cursor,omitempty"`
}

// listAudit: GET /v1/audit?action=&actor_id=&target=&since=&until=&limit=&cursor=
func (h *Handler) listAudit(c echo.Context) error {
	q := ops.AuditQuery{Action: c.QueryParam("action"), ActorID: c.QueryParam("actor_id"), Target: c.QueryParam("target"),
		Cursor: c.QueryParam("cursor")}
	var err error
	if q.Since, err = timeParam(c, "since"); err != nil {
		return err
	}
	if q.Until, err = timeParam(c, "until"); err != nil {
		return err
	}
	if q.Limit, err = limitParam(c); err != nil {
		return err
	}
	page, err := h.Audit.List(c.Request().Context(), q)
	if err != nil {
		return err
	}
	out := AuditPageJSON{Entries: make([]AuditEntryJSON, len(page.Entries)), NextCursor: page.NextCursor}
	for i, e := range page.Entries {
		d := e.Details
		if d == nil {
			d = map[string]any{}
		}
		out.Entries[i] = AuditEntryJSON{ID: e.ID, At: e.At, ActorKind: string(e.ActorKind), ActorID: e.ActorID,
			ActorName: e.ActorName, Action: e.Action, Target: e.Target, Details: d}
	}
	return c.JSON(http.StatusOK, out)
}

// limitParam reads the optional page size (0 when absent: the use case's
// default).
func limitParam(c echo.Context) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, domain.Invalid("limit", "limit must be a positive integer")
	}
	return n, nil
}

// timeParam reads an optional RFC 3339 query parameter.
func timeParam(c echo.Context, name string) (time.Time, error) {
	v := c.QueryParam(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, domain.Invalid(name, "%s must be an RFC 3339 time such as 2026-01-02T15:04:05Z", name)
	}
	return t, nil
}
