package ops

// The webhook administration use cases (settings.manage), one handler
// each, every one given only the store methods it calls.

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/threadengine/engine/app/auditctx"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// The store methods the handlers use (ports.WebhookStore's).
type (
	webhookGetter interface {
		GetWebhook(ctx context.Context, id string) (ports.Webhook, error)
	}
	webhookUpdater interface {
		UpdateWebhook(ctx context.Context, id string, fn func(*ports.Webhook) error) (ports.Webhook, error)
	}
)

// webhookAudit is what the changing use cases share: their clock and the
// audit log they record to.
type webhookAudit struct {
	audit ports.Audit
	clock ports.Clock
	log   *slog.Logger
}

func (a webhookAudit) now() time.Time { return webhookNow(a.clock) }

func webhookNow(c ports.Clock) time.Time { return c.Now().UTC().Truncate(time.Microsecond) }

func (a webhookAudit) record(ctx context.Context, p domain.Principal, action string, w ports.Webhook) {
	evs := make([]string, len(w.Events))
	for i, e := range w.Events {
		evs[i] = string(e)
	}
	e := ports.AuditEntry{ID: uuid.NewString(), At: a.now(), ActorKind: p.Kind, ActorID: p.ID, Action: action,
		Target: "webhook:" + w.ID, Details: map[string]any{"name": w.Name, "url": w.URL, "events": evs,
			"min_severity": string(w.MinSeverity), "format": string(w.Format), "enabled": w.Enabled}}
	// The action has committed: its line is written even if ctx ends now.
	ctx, cancel := auditctx.Detached(ctx)
	defer cancel()
	if err := a.audit.RecordAudit(ctx, e); err != nil {
		a.log.Error("audit record failed", "action", action, "err", err)
	}
}

// applyWebhookInput checks in and copies it onto w; URLs must name one of
// allowedHosts when it is not empty.
func applyWebhookInput(w *ports.Webhook, in WebhookInput, allowedHosts []string) error {
	if in.Name != nil {
		n := strings.TrimSpace(*in.Name)
		if n == "" || len(n) > domain.MaxWebhookNameLen {
			return domain.Invalid("name", "name must be 1-%d bytes", domain.MaxWebhookNameLen)
		}
		w.Name = n
	}
	if in.URL != nil {
		u, err := domain.CheckWebhookURL(strings.TrimSpace(*in.URL), allowedHosts)
		if err != nil {
			return err
		}
		w.URL = u.String()
	}
	if in.Format != nil {
		f, err := domain.ParseWebhookFormat(*in.Format)
		if err != nil {
			return err
		}
		w.Format = f
	}
	if in.Events != nil {
		evs := []domain.WebhookEvent{}
		for _, s := range *in.Events {
			e, err := domain.ParseWebhookEvent(s)
			if err != nil {
				return err
			}
			evs = append(evs, e)
		}
		w.Events = domain.EventsOfMask(domain.EventMask(evs))
	}
	if in.MinSeverity != nil {
		s, err := domain.ParseSeverity(*in.MinSeverity)
		if err != nil {
			return domain.Invalid("min_severity", "%s", err.Error())
		}
		w.MinSeverity = s
	}
	if in.Enabled != nil {
		w.Enabled = *in.Enabled
	}
	return nil
}

func newSecret() (string, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return "", domain.Internal(err, "no randomness for a webhook secret")
	}
	return domain.NewWebhookSecret(key), nil
}

// CreateWebhookHandler adds a webhook.
type CreateWebhookHandler struct {
	store interface {
		CreateWebhook(ctx context.Context, w ports.Webhook) error
	}
	a     webhookAudit
	hosts []string
}

// NewCreateWebhookHandler builds CreateWebhook.
func NewCreateWebhookHandler(store interface {
	CreateWebhook(ctx context.Context, w ports.Webhook) error
}, a webhookAudit, allowedHosts []string) CreateWebhookHandler {
	return CreateWebhookHandler{store: store, a: a, hosts: allowedHosts}
}

// Handle adds a webhook (settings.manage) and returns it with its secret,
// shown this once. Audited.
func (h CreateWebhookHandler) Handle(ctx context.Context, in WebhookInput) (WebhookView, string, error) {
	p, err := authz.Require(ctx, domain.PermSettingsManage)
	if err != nil {
		return WebhookView{}, "", err
	}
	if in.Name == nil || in.URL == nil {
		return WebhookView{}, "", domain.Invalid("url", "name and url are required")
	}
	now := h.a.now()
	w := ports.Webhook{ID: uuid.NewString(), Format: domain.FormatStandard, MinSeverity: domain.SeverityMajor,
		Events: []domain.WebhookEvent{}, Enabled: true, CreatedBy: p.ID, CreatedAt: now, UpdatedAt: now}
	if err := applyWebhookInput(&w, in, h.hosts); err != nil {
		return WebhookView{}, "", err
	}
	if w.Secret, err = newSecret(); err != nil {
		return WebhookView{}, "", err
	}
	if err := h.store.CreateWebhook(ctx, w); err != nil {
		return WebhookView{}, "", err
	}
	h.a.record(ctx, p, "webhook.create", w)
	return view(w), w.Secret, nil
}

// ListWebhooksHandler lists the webhooks.
type ListWebhooksHandler struct {
	store interface {
		ListWebhooks(ctx context.Context) ([]ports.Webhook, error)
	}
}

// NewListWebhooksHandler builds ListWebhooks.
func NewListWebhooksHandler(store interface {
	ListWebhooks(ctx context.Context) ([]ports.Webhook, error)
}) ListWebhooksHandler {
	return ListWebhooksHandler{store: store}
}

// Handle returns every webhook (settings.manage), secrets hidden.
func (h ListWebhooksHandler) Handle(ctx context.Context) ([]WebhookView, error) {
	if _, err := authz.Require(ctx, domain.PermSettingsManage); err != nil {
		return nil, err
	}
	ws, err := h.store.ListWebhooks(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]WebhookView, len(ws))
	for i, w := range ws {
		out[i] = view(w)
	}
	return out, nil
}

// GetWebhookHandler reads one webhook.
type GetWebhookHandler struct{ store webhookGetter }

// NewGetWebhookHandler builds GetWebhook.
func NewGetWebhookHandler(store webhookGetter) GetWebhookHandler {
	return GetWebhookHandler{store: store}
}

// Handle returns one webhook (settings.manage), its secret hidden.
func (h GetWebhookHandler) Handle(ctx context.Context, id string) (WebhookView, error) {
	if _, err := authz.Require(ctx, domain.PermSettingsManage); err != nil {
		return WebhookView{}, err
	}
	w, err := h.store.GetWebhook(ctx, id)
	return view(w), err
}

// UpdateWebhookHandler changes a webhook.
type UpdateWebhookHandler struct {
	store webhookUpdater
	a     webhookAudit
	hosts []string
}

// NewUpdateWebhookHandler builds UpdateWebhook.
func NewUpdateWebhookHandler(store webhookUpdater, a webhookAudit, allowedHosts []string) UpdateWebhookHandler {
	return UpdateWebhookHandler{store: store, a: a, hosts: allowedHosts}
}

// Handle changes the fields in set (settings.manage). Audited.
func (h UpdateWebhookHandler) Handle(ctx context.Context, id string, in WebhookInput) (WebhookView, error) {
	p, err := authz.Require(ctx, domain.PermSettingsManage)
	if err != nil {
		return WebhookView{}, err
	}
	w, err := h.store.UpdateWebhook(ctx, id, func(w *ports.Webhook) error {
		if err := applyWebhookInput(w, in, h.hosts); err != nil {
			return err
		}
		w.UpdatedAt = h.a.now()
		return nil
	})
	if err != nil {
		return WebhookView{}, err
	}
	h.a.record(ctx, p, "webhook.update", w)
	return view(w), nil
}

// RotateWebhookSecretHandler replaces a webhook's signing secret.
type RotateWebhookSecretHandler struct {
	store webhookUpdater
	a     webhookAudit
}

// NewRotateWebhookSecretHandler builds RotateWebhookSecret.
func NewRotateWebhookSecretHandler(store webhookUpdater, a webhookAudit) RotateWebhookSecretHandler {
	return RotateWebhookSecretHandler{store: store, a: a}
}

// Handle replaces the signing secret and returns the new one, shown this
// once (settings.manage). Audited.
func (h RotateWebhookSecretHandler) Handle(ctx context.Context, id string) (WebhookView, string, error) {
	p, err := authz.Require(ctx, domain.PermSettingsManage)
	if err != nil {
		return WebhookView{}, "", err
	}
	secret, err := newSecret()
	if err != nil {
		return WebhookView{}, "", err
	}
	w, err := h.store.UpdateWebhook(ctx, id, func(w *ports.Webhook) error {
		w.Secret, w.UpdatedAt = secret, h.a.now()
		return nil
	})
	if err != nil {
		return WebhookView{}, "", err
	}
	h.a.record(ctx, p, "webhook.rotate_secret", w)
	return view(w), secret, nil
}

// webhookDeleter reads a webhook (for the audit line) and deletes it.
type webhookDeleter interface {
	webhookGetter
	DeleteWebhook(ctx context.Context, id string) error
}

// DeleteWebhookHandler removes a webhook.
type DeleteWebhookHandler struct {
	store webhookDeleter
	a     webhookAudit
}

// NewDeleteWebhookHandler builds DeleteWebhook.
func NewDeleteWebhookHandler(store webhookDeleter, a webhookAudit) DeleteWebhookHandler {
	return DeleteWebhookHandler{store: store, a: a}
}

// Handle removes a webhook and its deliveries (settings.manage). Audited.
func (h DeleteWebhookHandler) Handle(ctx context.Context, id string) error {
	p, err := authz.Require(ctx, domain.PermSettingsManage)
	if err != nil {
		return err
	}
	w, err := h.store.GetWebhook(ctx, id)
	if err != nil {
		return err
	}
	if err := h.store.DeleteWebhook(ctx, id); err != nil {
		return err
	}
	h.a.record(ctx, p, "webhook.delete", w)
	return nil
}

// testEnqueuer reads a webhook and queues a delivery for it.
type testEnqueuer interface {
	webhookGetter
	EnqueueDelivery(ctx context.Context, d ports.WebhookDelivery) error
}

// SendTestWebhookHandler queues a test delivery.
type SendTestWebhookHandler struct {
	store testEnqueuer
	clock ports.Clock
	nudge func()
}

// NewSendTestWebhookHandler builds SendTestWebhook; nudge wakes the
// deliverer.
func NewSendTestWebhookHandler(store testEnqueuer, clock ports.Clock, nudge func()) SendTestWebhookHandler {
	return SendTestWebhookHandler{store: store, clock: clock, nudge: nudge}
}

// Handle queues a webhook.test delivery for the webhook, delivered like
// any alert (signed, retried), and wakes the deliverer (settings.manage).
func (h SendTestWebhookHandler) Handle(ctx context.Context, id string) (ports.WebhookDelivery, error) {
	p, err := authz.Require(ctx, domain.PermSettingsManage)
	if err != nil {
		return ports.WebhookDelivery{}, err
	}
	w, err := h.store.GetWebhook(ctx, id)
	if err != nil {
		return ports.WebhookDelivery{}, err
	}
	now := webhookNow(h.clock)
	body, err := json.Marshal(domain.WebhookPayload{Type: domain.EventWebhookTest, Timestamp: now,
		Data: domain.WebhookPayloadData{Message: "Test delivery for webhook '" + w.Name + "', sent by " + p.ID}})
	if err != nil {
		return ports.WebhookDelivery{}, domain.Internal(err, "encoding a test payload")
	}
	d := ports.WebhookDelivery{ID: "msg_" + uuid.NewString(), WebhookID: w.ID, EventType: domain.EventWebhookTest,
		Payload: body, State: ports.DeliveryPending, NextAttemptAt: now, CreatedAt: now}
	if err := h.store.EnqueueDelivery(ctx, d); err != nil {
		return ports.WebhookDelivery{}, err
	}
	if h.nudge != nil {
		h.nudge()
	}
	return d, nil
}

// deliveryLister reads a webhook (it must exist) and its delivery log.
type deliveryLister interface {
	webhookGetter
	ListDeliveries(ctx context.Context, webhookID string, limit int) ([]ports.WebhookDelivery, error)
}

// ListWebhookDeliveriesHandler reads a webhook's delivery log.
type ListWebhookDeliveriesHandler struct{ store deliveryLister }

// NewListWebhookDeliveriesHandler builds ListWebhookDeliveries.
func NewListWebhookDeliveriesHandler(store deliveryLister) ListWebhookDeliveriesHandler {
	return ListWebhookDeliveriesHandler{store: store}
}

// Handle returns the webhook's latest deliveries, newest first
// (settings.manage); limit 0 means DefaultDeliveriesListed.
func (h ListWebhookDeliveriesHandler) Handle(ctx context.Context, id string, limit int) ([]ports.WebhookDelivery, error) {
	if _, err := authz.Require(ctx, domain.PermSettingsManage); err != nil {
		return nil, err
	}
	if limit == 0 {
		limit = DefaultDeliveriesListed
	}
	if limit < 0 || limit > MaxDeliveriesListed {
		return nil, domain.Invalid("limit", "limit must be between 1 and %d", MaxDeliveriesListed)
	}
	if _, err := h.store.GetWebhook(ctx, id); err != nil {
		return nil, err
	}
	return h.store.ListDeliveries(ctx, id, limit)
}
