package opshttp

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/adapters/httpapi"
	"github.com/threadengine/engine/app/ops"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// WebhookJSON is a webhook in /v1/webhooks answers. Secret is set only in
// the answers to POST /v1/webhooks and POST …/rotate-secret.
type WebhookJSON struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	URL         string    `json:"url"`
	Format      string    `json:"format"`
	Events      []string  `json:"events"`
	MinSeverity string    `json:"min_severity"`
	Enabled     bool      `json:"enabled"`
	SecretHint  string    `json:"secret_hint"`
	Secret      string    `json:"secret,omitempty"`
	CreatedBy   string    `json:"created_by"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// WebhookListJSON is the body of GET /v1/webhooks.
type WebhookListJSON struct {
	Webhooks []WebhookJSON `json:"webhooks"`
}

// DeliveryJSON is one delivery log entry.
type DeliveryJSON struct {
	ID             string     `json:"id"`
	WebhookID      string     `json:"webhook_id"`
	Event          string     `json:"event"`
	ThreadID       string     `json:"thread_id,omitempty"`
	NotificationID string     `json:"notification_id,omitempty"`
	State          string     `json:"state"`
	Attempts       int        `json:"attempts"`
	NextAttemptAt  *time.Time `json:"next_attempt_at,omitempty"`
	LastStatus     int        `json:"last_status,omitempty"`
	LastError      string     `json:"last_error,omitempty"`
	LastLatencyMS  int64      `json:"last_latency_ms"`
	LastAttemptAt  *time.Time `json:"last_attempt_at,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
	SettledAt      *time.Time `json:"settled_at,omitempty"`
}

// DeliveryListJSON is the body of GET /v1/webhooks/:id/deliveries.
type DeliveryListJSON struct {
	Deliveries []DeliveryJSON `json:"deliveries"`
}

type webhookBody struct {
	Name        *string   `json:"name"`
	URL         *string   `json:"url"`
	Format      *string   `json:"format"`
	Events      *[]string `json:"events"`
	MinSeverity *string   `json:"min_severity"`
	Enabled     *bool     `json:"enabled"`
}

func (b webhookBody) input() ops.WebhookInput {
	return ops.WebhookInput{Name: b.Name, URL: b.URL, Format: b.Format, Events: b.Events, MinSeverity: b.MinSeverity, Enabled: b.Enabled}
}

func webhookJSON(v ops.WebhookView, secret string) WebhookJSON {
	evs := make([]string, len(v.Events))
	for i, e := range v.Events {
		evs[i] = string(e)
	}
	return WebhookJSON{ID: v.ID, Name: v.Name, URL: v.URL, Format: string(v.Format), Events: evs,
		MinSeverity: string(v.MinSeverity), Enabled: v.Enabled, SecretHint: v.SecretHint, Secret: secret,
		CreatedBy: v.CreatedBy, CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt}
}

func deliveryJSON(d ports.WebhookDelivery) DeliveryJSON {
	out := DeliveryJSON{ID: d.ID, WebhookID: d.WebhookID, Event: string(d.EventType), ThreadID: d.ThreadID,
		NotificationID: d.NotificationID, State: string(d.State), Attempts: d.Attempts, LastStatus: d.LastStatus,
		LastError: d.LastError, LastLatencyMS: d.LastLatency.Milliseconds(), LastAttemptAt: d.LastAttemptAt,
		CreatedAt: d.CreatedAt, SettledAt: d.SettledAt}
	if d.State == ports.DeliveryPending {
		next := d.NextAttemptAt
		out.NextAttemptAt = &next
	}
	return out
}

func (h *Handler) mountWebhooks(e *echo.Echo, mw echo.MiddlewareFunc) {
	e.GET("/v1/webhooks", h.listWebhooks, mw)
	e.POST("/v1/webhooks", h.createWebhook, mw)
	e.GET("/v1/webhooks/:id", h.getWebhook, mw)
	e.PATCH("/v1/webhooks/:id", h.updateWebhook, mw)
	e.DELETE("/v1/webhooks/:id", h.deleteWebhook, mw)
	e.POST("/v1/webhooks/:id/rotate-secret", h.rotateWebhookSecret, mw)
	e.POST("/v1/webhooks/:id/test", h.testWebhook, mw)
	e.GET("/v1/webhooks/:id/deliveries", h.listDeliveries, mw)
}

func (h *Handler) listWebhooks(c echo.Context) error {
	ws, err := h.Webhooks.List.Handle(c.Request().Context())
	if err != nil {
		return err
	}
	out := WebhookListJSON{Webhooks: make([]WebhookJSON, len(ws))}
	for i, w := range ws {
		out.Webhooks[i] = webhookJSON(w, "")
	}
	return c.JSON(http.StatusOK, out)
}

func (h *Handler) createWebhook(c echo.Context) error {
	var b webhookBody
	if err := httpapi.DecodeJSON(c, &b); err != nil {
		return err
	}
	v, secret, err := h.Webhooks.Create.Handle(c.Request().Context(), b.input())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, webhookJSON(v, secret))
}

func (h *Handler) getWebhook(c echo.Context) error {
	v, err := h.Webhooks.Get.Handle(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, webhookJSON(v, ""))
}

func (h *Handler) updateWebhook(c echo.Context) error {
	var b webhookBody
	if err := httpapi.DecodeJSON(c, &b); err != nil {
		return err
	}
	v, err := h.Webhooks.Update.Handle(c.Request().Context(), c.Param("id"), b.input())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, webhookJSON(v, ""))
}

func (h *Handler) deleteWebhook(c echo.Context) error {
	if err := h.Webhooks.Delete.Handle(c.Request().Context(), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (h *Handler) rotateWebhookSecret(c echo.Context) error {
	v, secret, err := h.Webhooks.RotateSecret.Handle(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, webhookJSON(v, secret))
}

func (h *Handler) testWebhook(c echo.Context) error {
	d, err := h.Webhooks.SendTest.Handle(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, deliveryJSON(d))
}

func (h *Handler) listDeliveries(c echo.Context) error {
	limit := 0
	if s := c.QueryParam("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return domain.Invalid("limit", "limit must be a number")
		}
		limit = n
	}
	ds, err := h.Webhooks.Deliveries.Handle(c.Request().Context(), c.Param("id"), limit)
	if err != nil {
		return err
	}
	out := DeliveryListJSON{Deliveries: make([]DeliveryJSON, len(ds))}
	for i, d := range ds {
		out.Deliveries[i] = deliveryJSON(d)
	}
	return c.JSON(http.StatusOK, out)
}
