package opshttp

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/app/ops"
)

// RefusalJSON is one refused step submission in GET /v1/refusals.
type RefusalJSON struct {
	ID              string            `json:"id"`
	At              time.Time         `json:"at"`
	ThreadID        string            `json:"thread_id"`
	ContractName    string            `json:"contract_name"`
	ContractVersion int               `json:"contract_version"`
	StepName        string            `json:"step_name"`
	IdempotencyKey  string            `json:"idempotency_key"`
	PrincipalID     string            `json:"principal_id"`
	Role            string            `json:"role"`
	Code            string            `json:"code"`
	Field           string            `json:"field"`
	Rule            string            `json:"rule"`
	Message         string            `json:"message"`
	Context         map[string]string `json:"context"`
}

// RefusalPageJSON is the body of GET /v1/refusals.
type RefusalPageJSON struct {
	Refusals   []RefusalJSON `json:"refusals"`
	NextCursor string        `json:"next_cursor,omitempty"`
}

func (h *Handler) listRefusals(c echo.Context) error {
	q := ops.RefusalQuery{ThreadID: c.QueryParam("thread_id"), Contract: c.QueryParam("contract"), Cursor: c.QueryParam("cursor")}
	var err error
	if q.Limit, err = limitParam(c); err != nil {
		return err
	}
	page, err := h.StepRefusals.List(c.Request().Context(), q)
	if err != nil {
		return err
	}
	out := RefusalPageJSON{Refusals: make([]RefusalJSON, len(page.Refusals)), NextCursor: page.NextCursor}
	for i, r := range page.Refusals {
		ctx := r.Context
		if ctx == nil {
			ctx = map[string]string{}
		}
		out.Refusals[i] = RefusalJSON{ID: r.ID, At: r.CreatedAt, ThreadID: r.ThreadID, ContractName: r.ContractName,
			ContractVersion: r.ContractVersion, StepName: r.StepName, IdempotencyKey: r.IdempotencyKey, PrincipalID: r.PrincipalID,
			Role: r.Role, Code: r.Code, Field: r.Field, Rule: r.Rule, Message: r.Message, Context: ctx}
	}
	return c.JSON(http.StatusOK, out)
}
