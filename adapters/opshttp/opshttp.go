// Package opshttp is the operators' REST surface: thread deletion, export,
// the audit log, retention and alert webhooks. Handlers only translate HTTP; the use cases in app
// check permissions and audit.
package opshttp

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/app"
)

// Handler serves the operator endpoints.
type Handler struct {
	Erasure   *app.Erasure
	Audit     *app.AuditLog
	Exports   *app.Exports
	Retention *app.Retention
	// Webhooks serves /v1/webhooks (not mounted when nil).
	Webhooks *app.Webhooks
}

// Mount registers the routes behind mw (authentication).
func (h *Handler) Mount(e *echo.Echo, mw echo.MiddlewareFunc) {
	e.DELETE("/v1/threads/:id", h.deleteThread, mw)
	e.GET("/v1/audit", h.listAudit, mw)
	e.GET("/v1/threads/export", h.exportThreads, mw)
	e.GET("/v1/threads/:id/export", h.exportThread, mw)
	e.GET("/v1/engine/retention", h.getRetention, mw)
	e.PUT("/v1/engine/retention", h.setRetention, mw)
	e.DELETE("/v1/engine/retention", h.resetRetention, mw)
	if h.Webhooks != nil {
		h.mountWebhooks(e, mw)
	}
}

// deleteThread answers 204 once the thread and all its rows are gone.
func (h *Handler) deleteThread(c echo.Context) error {
	if err := h.Erasure.DeleteThread(c.Request().Context(), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
