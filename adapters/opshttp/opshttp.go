// Package opshttp is the operators' REST surface: thread deletion, export,
// the audit log, retention and alert webhooks. Handlers only translate HTTP; the use cases in app
// check permissions and audit.
package opshttp

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/adapters/limits"
	"github.com/threadengine/engine/app/ops"
	"github.com/threadengine/engine/app/readmodel"
	"github.com/threadengine/engine/app/transparency"
)

// Handler serves the operator endpoints.
type Handler struct {
	Erasure   *ops.Erasure
	Audit     *ops.AuditLog
	Exports   *readmodel.Exports
	Retention *ops.Retention
	// Webhooks serves /v1/webhooks (not mounted when nil).
	Webhooks *ops.Webhooks
	// Queries serves GET /v1/threads/version.
	Queries *readmodel.Queries
	// Log adds transparency-log proofs to exports (none when nil).
	Log *transparency.Application
	// StepRefusals serves GET /v1/refusals (not mounted when nil).
	StepRefusals *ops.StepRefusals
	// MaxExportBytes ends an NDJSON export stream once it has sent this
	// many bytes, with a truncation line naming where to go on (0: no
	// budget; config limits.graphql.export_max_bytes).
	MaxExportBytes int64
	// Refused counts an export cut by its budget (may be nil).
	Refused func(limits.Name)
}

// Mount registers the routes behind mw (authentication).
func (h *Handler) Mount(e *echo.Echo, mw echo.MiddlewareFunc) {
	e.DELETE("/v1/threads/:id", h.deleteThread, mw)
	e.GET("/v1/audit", h.listAudit, mw)
	e.GET("/v1/threads/export", h.exportThreads, mw)
	e.GET("/v1/threads/version", h.threadsVersion, mw)
	e.GET("/v1/threads/:id/export", h.exportThread, mw)
	e.GET("/v1/engine/retention", h.getRetention, mw)
	e.PUT("/v1/engine/retention", h.setRetention, mw)
	e.DELETE("/v1/engine/retention", h.resetRetention, mw)
	if h.Webhooks != nil {
		h.mountWebhooks(e, mw)
	}
	if h.StepRefusals != nil {
		e.GET("/v1/refusals", h.listRefusals, mw)
	}
}

// deleteThread answers 204 once the thread and all its rows are gone.
func (h *Handler) deleteThread(c echo.Context) error {
	if err := h.Erasure.DeleteThread(c.Request().Context(), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// ThreadsVersionJSON is the body of GET /v1/threads/version.
type ThreadsVersionJSON struct {
	Version string `json:"version"`
}

// threadsVersion answers the threads' version with it as a strong ETag, and
// 304 without a body when If-None-Match already names it: a list polls this
// and reloads only when it changed.
func (h *Handler) threadsVersion(c echo.Context) error {
	v, err := h.Queries.ThreadsVersion.Handle(c.Request().Context())
	if err != nil {
		return err
	}
	etag := `"` + v + `"`
	c.Response().Header().Set("ETag", etag)
	c.Response().Header().Set("Cache-Control", "no-cache")
	for _, m := range strings.Split(c.Request().Header.Get("If-None-Match"), ",") {
		if m = strings.TrimSpace(m); m == etag || m == "*" {
			return c.NoContent(http.StatusNotModified)
		}
	}
	return c.JSON(http.StatusOK, ThreadsVersionJSON{Version: v})
}
