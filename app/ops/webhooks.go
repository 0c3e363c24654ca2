package ops

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// WebhooksDeps wires the alert webhook use cases.
type WebhooksDeps struct {
	Store  ports.WebhookStore
	Sender ports.WebhookSender
	Audit  ports.Audit
	Clock  ports.Clock
	// Metrics counts delivery attempts (optional).
	Metrics ports.WebhookMetrics
	Log     *slog.Logger
	// AllowedHosts, when not empty, is the only hosts webhooks may post to
	// (alerts.allowed_hosts).
	AllowedHosts []string
	// PrivateAnswerDetails: log a failed attempt on a private address in
	// detail (alerts.private_answer_details), not as errPrivateFailed.
	PrivateAnswerDetails bool
	// Retry is the delivery schedule (alerts.retry_*).
	Retry domain.WebhookRetry
	// Lease bounds one attempt's claim on a delivery; it must exceed the
	// sender's request timeout.
	Lease time.Duration
	// Batch deliveries are claimed per round, sent by at most Workers
	// goroutines at once.
	Batch, Workers int
	// LogRetention: settled deliveries older than it are pruned.
	LogRetention time.Duration
	// EngineURL returns the engine URL in force ("" when unset; optional):
	// each alert then links to its thread's page in the UI (data.url),
	// filled when it is sent, so an engine URL set later applies to
	// deliveries still in the outbox.
	EngineURL func(ctx context.Context) (string, error)
	// Jitter returns a number in [0,1) (tests make it fixed).
	Jitter func() float64
}

// Webhooks manages alert webhooks (administrators only) and delivers
// their outbox.
type Webhooks struct {
	d     WebhooksDeps
	nudge chan struct{}
}

// Delivery log sizes.
const (
	DefaultDeliveriesListed = 50
	MaxDeliveriesListed     = 500
	// maxResponseExcerpt bytes of a failed answer's body go to the log
	// (never for a private address: errPrivateFailed).
	maxResponseExcerpt = 512
)

// NewWebhooks builds the use cases.
func NewWebhooks(d WebhooksDeps) *Webhooks {
	if d.Store == nil || d.Sender == nil || d.Audit == nil || d.Clock == nil {
		panic("ops.NewWebhooks: missing dependency")
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Metrics == nil {
		d.Metrics = ports.NopMetrics{}
	}
	if d.Retry.MaxAttempts < 1 {
		d.Retry = domain.WebhookRetry{Base: 10 * time.Second, Max: time.Hour, MaxAttempts: 8}
	}
	if d.Lease <= 0 {
		d.Lease = time.Minute
	}
	if d.Batch < 1 {
		d.Batch = 32
	}
	if d.Workers < 1 {
		d.Workers = 4
	}
	if d.LogRetention <= 0 {
		d.LogRetention = 7 * 24 * time.Hour
	}
	if d.Jitter == nil {
		d.Jitter = randomJitter
	}
	return &Webhooks{d: d, nudge: make(chan struct{}, 1)}
}

func randomJitter() float64 {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return float64(uint16(b[0])<<8|uint16(b[1])) / 65536
}

// WebhookInput creates a webhook or, with nil fields left alone, changes one.
type WebhookInput struct {
	Name        *string
	URL         *string
	Format      *string
	Events      *[]string
	MinSeverity *string
	Enabled     *bool
}

// WebhookView is a webhook as the API shows it: the secret only in
// SecretHint (its last 4 characters), except once, on creation and rotation.
type WebhookView struct {
	ports.Webhook
	SecretHint string
}

func view(w ports.Webhook) WebhookView {
	hint := ""
	if len(w.Secret) > 4 {
		hint = "…" + w.Secret[len(w.Secret)-4:]
	}
	w.Secret = ""
	return WebhookView{Webhook: w, SecretHint: hint}
}

func (h *Webhooks) now() time.Time { return h.d.Clock.Now().UTC().Truncate(time.Microsecond) }

// apply checks in and copies it onto w.
func (h *Webhooks) apply(w *ports.Webhook, in WebhookInput) error {
	if in.Name != nil {
		n := strings.TrimSpace(*in.Name)
		if n == "" || len(n) > domain.MaxWebhookNameLen {
			return domain.Invalid("name", "name must be 1-%d bytes", domain.MaxWebhookNameLen)
		}
		w.Name = n
	}
	if in.URL != nil {
		u, err := domain.CheckWebhookURL(strings.TrimSpace(*in.URL), h.d.AllowedHosts)
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

// Create adds a webhook (settings.manage) and returns it with its secret,
// shown this once. Audited.
func (h *Webhooks) Create(ctx context.Context, in WebhookInput) (WebhookView, string, error) {
	p, err := authz.Require(ctx, domain.PermSettingsManage)
	if err != nil {
		return WebhookView{}, "", err
	}
	if in.Name == nil || in.URL == nil {
		return WebhookView{}, "", domain.Invalid("url", "name and url are required")
	}
	now := h.now()
	w := ports.Webhook{ID: uuid.NewString(), Format: domain.FormatStandard, MinSeverity: domain.SeverityMajor,
		Events: []domain.WebhookEvent{}, Enabled: true, CreatedBy: p.ID, CreatedAt: now, UpdatedAt: now}
	if err := h.apply(&w, in); err != nil {
		return WebhookView{}, "", err
	}
	if w.Secret, err = newSecret(); err != nil {
		return WebhookView{}, "", err
	}
	if err := h.d.Store.CreateWebhook(ctx, w); err != nil {
		return WebhookView{}, "", err
	}
	h.audit(ctx, p, "webhook.create", w)
	return view(w), w.Secret, nil
}

// List returns every webhook (settings.manage), secrets hidden.
func (h *Webhooks) List(ctx context.Context) ([]WebhookView, error) {
	if _, err := authz.Require(ctx, domain.PermSettingsManage); err != nil {
		return nil, err
	}
	ws, err := h.d.Store.ListWebhooks(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]WebhookView, len(ws))
	for i, w := range ws {
		out[i] = view(w)
	}
	return out, nil
}

// Get returns one webhook (settings.manage), its secret hidden.
func (h *Webhooks) Get(ctx context.Context, id string) (WebhookView, error) {
	if _, err := authz.Require(ctx, domain.PermSettingsManage); err != nil {
		return WebhookView{}, err
	}
	w, err := h.d.Store.GetWebhook(ctx, id)
	return view(w), err
}

// Update changes the fields in set (settings.manage). Audited.
func (h *Webhooks) Update(ctx context.Context, id string, in WebhookInput) (WebhookView, error) {
	p, err := authz.Require(ctx, domain.PermSettingsManage)
	if err != nil {
		return WebhookView{}, err
	}
	w, err := h.d.Store.UpdateWebhook(ctx, id, func(w *ports.Webhook) error {
		if err := h.apply(w, in); err != nil {
			return err
		}
		w.UpdatedAt = h.now()
		return nil
	})
	if err != nil {
		return WebhookView{}, err
	}
	h.audit(ctx, p, "webhook.update", w)
	return view(w), nil
}

// RotateSecret replaces the signing secret and returns the new one, shown
// this once (settings.manage). Audited.
func (h *Webhooks) RotateSecret(ctx context.Context, id string) (WebhookView, string, error) {
	p, err := authz.Require(ctx, domain.PermSettingsManage)
	if err != nil {
		return WebhookView{}, "", err
	}
	secret, err := newSecret()
	if err != nil {
		return WebhookView{}, "", err
	}
	w, err := h.d.Store.UpdateWebhook(ctx, id, func(w *ports.Webhook) error {
		w.Secret, w.UpdatedAt = secret, h.now()
		return nil
	})
	if err != nil {
		return WebhookView{}, "", err
	}
	h.audit(ctx, p, "webhook.rotate_secret", w)
	return view(w), secret, nil
}

// Delete removes a webhook and its deliveries (settings.manage). Audited.
func (h *Webhooks) Delete(ctx context.Context, id string) error {
	p, err := authz.Require(ctx, domain.PermSettingsManage)
	if err != nil {
		return err
	}
	w, err := h.d.Store.GetWebhook(ctx, id)
	if err != nil {
		return err
	}
	if err := h.d.Store.DeleteWebhook(ctx, id); err != nil {
		return err
	}
	h.audit(ctx, p, "webhook.delete", w)
	return nil
}

// SendTest queues a webhook.test delivery for the webhook, delivered like
// any alert (signed, retried), and wakes the deliverer (settings.manage).
func (h *Webhooks) SendTest(ctx context.Context, id string) (ports.WebhookDelivery, error) {
	p, err := authz.Require(ctx, domain.PermSettingsManage)
	if err != nil {
		return ports.WebhookDelivery{}, err
	}
	w, err := h.d.Store.GetWebhook(ctx, id)
	if err != nil {
		return ports.WebhookDelivery{}, err
	}
	now := h.now()
	body, err := json.Marshal(domain.WebhookPayload{Type: domain.EventWebhookTest, Timestamp: now,
		Data: domain.WebhookPayloadData{Message: "Test delivery for webhook '" + w.Name + "', sent by " + p.ID}})
	if err != nil {
		return ports.WebhookDelivery{}, domain.Internal(err, "encoding a test payload")
	}
	d := ports.WebhookDelivery{ID: "msg_" + uuid.NewString(), WebhookID: w.ID, EventType: domain.EventWebhookTest,
		Payload: body, State: ports.DeliveryPending, NextAttemptAt: now, CreatedAt: now}
	if err := h.d.Store.EnqueueDelivery(ctx, d); err != nil {
		return ports.WebhookDelivery{}, err
	}
	h.Nudge()
	return d, nil
}

// Deliveries returns the webhook's latest deliveries, newest first
// (settings.manage); limit 0 means DefaultDeliveriesListed.
func (h *Webhooks) Deliveries(ctx context.Context, id string, limit int) ([]ports.WebhookDelivery, error) {
	if _, err := authz.Require(ctx, domain.PermSettingsManage); err != nil {
		return nil, err
	}
	if limit == 0 {
		limit = DefaultDeliveriesListed
	}
	if limit < 0 || limit > MaxDeliveriesListed {
		return nil, domain.Invalid("limit", "limit must be between 1 and %d", MaxDeliveriesListed)
	}
	if _, err := h.d.Store.GetWebhook(ctx, id); err != nil {
		return nil, err
	}
	return h.d.Store.ListDeliveries(ctx, id, limit)
}

// Nudge wakes the deliverer (new deliveries are due now).
func (h *Webhooks) Nudge() {
	select {
	case h.nudge <- struct{}{}:
	default:
	}
}

func (h *Webhooks) audit(ctx context.Context, p domain.Principal, action string, w ports.Webhook) {
	evs := make([]string, len(w.Events))
	for i, e := range w.Events {
		evs[i] = string(e)
	}
	e := ports.AuditEntry{ID: uuid.NewString(), At: h.now(), ActorKind: p.Kind, ActorID: p.ID, Action: action,
		Target: "webhook:" + w.ID, Details: map[string]any{"name": w.Name, "url": w.URL, "events": evs,
			"min_severity": string(w.MinSeverity), "format": string(w.Format), "enabled": w.Enabled}}
	if err := h.d.Audit.RecordAudit(ctx, e); err != nil {
		h.d.Log.Error("audit record failed", "action", action, "err", err)
	}
}
