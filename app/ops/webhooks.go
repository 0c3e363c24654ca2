package ops

import (
	"context"
	"crypto/rand"
	"log/slog"
	"time"

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

// Webhooks holds the alert webhook use cases, one handler each (built by
// NewWebhooks from one set of dependencies), and the deliverer that sends
// their outbox.
type Webhooks struct {
	Create       CreateWebhookHandler
	List         ListWebhooksHandler
	Get          GetWebhookHandler
	Update       UpdateWebhookHandler
	RotateSecret RotateWebhookSecretHandler
	Delete       DeleteWebhookHandler
	SendTest     SendTestWebhookHandler
	Deliveries   ListWebhookDeliveriesHandler
	Deliverer    *WebhookDeliverer
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
	a := webhookAudit{audit: d.Audit, clock: d.Clock, log: d.Log}
	deliverer := NewWebhookDeliverer(WebhookDelivererDeps{Store: d.Store, Sender: d.Sender, Clock: d.Clock, Metrics: d.Metrics,
		Log: d.Log, AllowedHosts: d.AllowedHosts, PrivateAnswerDetails: d.PrivateAnswerDetails, Retry: d.Retry, Lease: d.Lease, Batch: d.Batch, Workers: d.Workers,
		LogRetention: d.LogRetention, EngineURL: d.EngineURL, Jitter: d.Jitter})
	return &Webhooks{
		Create:       NewCreateWebhookHandler(d.Store, a, d.AllowedHosts),
		List:         NewListWebhooksHandler(d.Store),
		Get:          NewGetWebhookHandler(d.Store),
		Update:       NewUpdateWebhookHandler(d.Store, a, d.AllowedHosts),
		RotateSecret: NewRotateWebhookSecretHandler(d.Store, a),
		Delete:       NewDeleteWebhookHandler(d.Store, a),
		SendTest:     NewSendTestWebhookHandler(d.Store, d.Clock, deliverer.Nudge),
		Deliveries:   NewListWebhookDeliveriesHandler(d.Store),
		Deliverer:    deliverer,
	}
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
