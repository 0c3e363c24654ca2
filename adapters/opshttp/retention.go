package opshttp

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/adapters/httpapi"
	"github.com/threadengine/engine/app/ops"
	"github.com/threadengine/engine/domain"
)

// RetentionJSON is the body of GET/PUT/DELETE /v1/engine/retention.
type RetentionJSON struct {
	ThreadsDays       int    `json:"threads_days"`
	Source            string `json:"source"`
	ConfigThreadsDays int    `json:"config_threads_days"`
	ActiveIdleDays    int    `json:"active_idle_days"`
}

type retentionBody struct {
	ThreadsDays *int `json:"threads_days"`
}

func retentionJSON(v ops.RetentionView) RetentionJSON {
	return RetentionJSON{ThreadsDays: v.ThreadsDays, Source: string(v.Source), ConfigThreadsDays: v.ConfigDays,
		ActiveIdleDays: v.ActiveIdleDays}
}

func (h *Handler) getRetention(c echo.Context) error {
	v, err := h.Retention.Get.Handle(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, retentionJSON(v))
}

func (h *Handler) setRetention(c echo.Context) error {
	var b retentionBody
	if err := httpapi.DecodeJSON(c, &b); err != nil {
		return err
	}
	if b.ThreadsDays == nil {
		return domain.Invalid("threads_days", "threads_days is required")
	}
	v, err := h.Retention.Set.Handle(c.Request().Context(), *b.ThreadsDays)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, retentionJSON(v))
}

func (h *Handler) resetRetention(c echo.Context) error {
	v, err := h.Retention.Reset.Handle(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, retentionJSON(v))
}
