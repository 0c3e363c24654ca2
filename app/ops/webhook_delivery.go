package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// deliveryOutbox is the part of the webhook store the deliverer uses.
type deliveryOutbox interface {
	ClaimDeliveries(ctx context.Context, now, until time.Time, token string, limit int) ([]ports.DeliveryJob, error)
	SettleDelivery(ctx context.Context, o ports.DeliveryOutcome) (bool, error)
	PruneDeliveries(ctx context.Context, before time.Time, limit int) (int, error)
	CountPendingDeliveries(ctx context.Context) (int, error)
}

// WebhookDelivererDeps wires the deliverer (NewWebhooks fills the
// defaults; see WebhooksDeps for each setting).
type WebhookDelivererDeps struct {
	Store        deliveryOutbox
	Sender       ports.WebhookSender
	Clock        ports.Clock
	Metrics      ports.WebhookMetrics
	Log          *slog.Logger
	AllowedHosts []string
	// PrivateAnswerDetails: see WebhooksDeps.
	PrivateAnswerDetails bool
	Retry                domain.WebhookRetry
	Lease                time.Duration
	Batch                int
	Workers              int
	LogRetention         time.Duration
	EngineURL            func(ctx context.Context) (string, error)
	Jitter               func() float64
}

// WebhookDeliverer sends the webhook outbox: every replica runs one, and
// leases keep them from sending one delivery at once.
type WebhookDeliverer struct {
	d     WebhookDelivererDeps
	nudge chan struct{}
}

// NewWebhookDeliverer builds the deliverer.
func NewWebhookDeliverer(d WebhookDelivererDeps) *WebhookDeliverer {
	return &WebhookDeliverer{d: d, nudge: make(chan struct{}, 1)}
}

// Nudge wakes the deliverer (new deliveries are due now).
func (h *WebhookDeliverer) Nudge() {
	select {
	case h.nudge <- struct{}{}:
	default:
	}
}

// DeliveryRound is what one DeliverDue round did.
type DeliveryRound struct {
	Attempted, Delivered, Retried, Failed int
}

// DeliverDue runs one round: it leases up to Batch due deliveries (other
// replicas cannot take them while the lease lasts), sends them with at most
// Workers requests in flight, and settles each: delivered on a 2xx answer,
// rescheduled with backoff otherwise, failed after the last attempt. It
// holds at most Batch deliveries in memory, whatever the outbox holds.
func (h *WebhookDeliverer) DeliverDue(ctx context.Context) (DeliveryRound, error) {
	var r DeliveryRound
	now := webhookNow(h.d.Clock)
	token := uuid.NewString()
	jobs, err := h.d.Store.ClaimDeliveries(ctx, now, now.Add(h.d.Lease), token, h.d.Batch)
	if err != nil || len(jobs) == 0 {
		return r, err
	}
	var mu sync.Mutex
	sem := make(chan struct{}, h.d.Workers)
	var wg sync.WaitGroup
	for _, j := range jobs {
		sem <- struct{}{}
		wg.Add(1)
		go func(j ports.DeliveryJob) {
			defer func() { <-sem; wg.Done() }()
			state := h.attempt(ctx, j)
			mu.Lock()
			defer mu.Unlock()
			r.Attempted++
			switch state {
			case ports.DeliveryDelivered:
				r.Delivered++
			case ports.DeliveryFailed:
				r.Failed++
			default:
				r.Retried++
			}
		}(j)
	}
	wg.Wait()
	return r, nil
}

// deliveryBody is what a delivery posts for a webhook of format f; an
// alert about a thread gets the thread's UI link when engineURL is known.
func deliveryBody(payload []byte, f domain.WebhookFormat, engineURL string) ([]byte, error) {
	if f != domain.FormatSlack && engineURL == "" {
		return payload, nil
	}
	var p domain.WebhookPayload
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, err
	}
	if engineURL != "" && p.Data.ThreadID != "" && p.Data.URL == "" {
		p.Data.URL = domain.ThreadPageURL(engineURL, p.Data.ThreadID)
	}
	if f != domain.FormatSlack {
		return json.Marshal(p)
	}
	return json.Marshal(struct {
		Text string `json:"text"`
	}{domain.SlackText(p)})
}

// engineURL is the engine URL in force, "" when unknown (a lookup failure
// only costs the link).
func (h *WebhookDeliverer) engineURL(ctx context.Context) string {
	if h.d.EngineURL == nil {
		return ""
	}
	u, err := h.d.EngineURL(ctx)
	if err != nil {
		h.d.Log.Warn("webhook: engine URL not read; alerts go without their thread link", "err", err)
		return ""
	}
	return u
}

// attempt sends one leased delivery and records the outcome.
func (h *WebhookDeliverer) attempt(ctx context.Context, j ports.DeliveryJob) ports.DeliveryState {
	d := j.Delivery
	o := ports.DeliveryOutcome{ID: d.ID, LeaseToken: j.LeaseToken}
	body, err := deliveryBody(d.Payload, j.Format, h.engineURL(ctx))
	if err == nil && len(h.d.AllowedHosts) > 0 {
		// The allow-list may have changed since the webhook was saved.
		_, err = domain.CheckWebhookURL(j.URL, h.d.AllowedHosts)
	}
	var resp ports.WebhookResponse
	start := time.Now()
	sentAt := webhookNow(h.d.Clock)
	if err == nil {
		var sig string
		sig, err = domain.SignWebhook(j.Secret, d.ID, sentAt, body)
		if err == nil {
			resp, err = h.d.Sender.Send(ctx, ports.WebhookRequest{URL: j.URL, Body: body, TraceParent: j.TraceParent, Headers: map[string]string{
				"Content-Type": "application/json", "User-Agent": "threadengine-webhooks/1",
				"webhook-id": d.ID, "webhook-timestamp": strconv.FormatInt(sentAt.Unix(), 10), "webhook-signature": sig}})
		}
	}
	o.Latency = time.Since(start)
	o.At, o.Status = webhookNow(h.d.Clock), resp.Status
	if err != nil && ctx.Err() != nil {
		// This engine is stopping: the attempt was cut short by us, not by
		// the receiver. It is not counted; the next claimer (another
		// replica, or this engine after its restart) sends it again.
		o.Interrupted = true
		if _, serr := h.d.Store.SettleDelivery(context.WithoutCancel(ctx), o); serr != nil {
			h.d.Log.Warn("webhook delivery not given back", "delivery", d.ID, "err", serr)
		}
		return ports.DeliveryPending
	}
	switch {
	case resp.Private && !h.d.PrivateAnswerDetails && (err != nil || resp.Status < 200 || resp.Status > 299):
		// An internal service answered, or did not: the log says neither
		// what nor how fast, so a closed port and an open one look alike.
		o.Status, o.Latency, o.Error = 0, 0, errPrivateFailed
	case err != nil:
		o.Error = err.Error()
	case resp.Status < 200 || resp.Status > 299:
		o.Error = fmt.Sprintf("HTTP %d", resp.Status)
		if resp.Body != "" {
			ex := resp.Body
			if len(ex) > maxResponseExcerpt {
				ex = ex[:maxResponseExcerpt]
			}
			o.Error += ": " + ex
		}
	}
	outcome := "delivered"
	o.State = ports.DeliveryDelivered
	if o.Error != "" {
		if wait, ok := h.d.Retry.Next(d.Attempts, h.d.Jitter()); ok {
			o.State, o.NextAttemptAt, outcome = ports.DeliveryPending, o.At.Add(wait), "retry"
		} else {
			o.State, outcome = ports.DeliveryFailed, "failed"
		}
	}
	h.d.Metrics.WebhookAttempt(outcome, o.Latency)
	if o.State == ports.DeliveryDelivered {
		h.d.Metrics.WebhookDelivered(o.At.Sub(d.CreatedAt))
	}
	if ok, err := h.d.Store.SettleDelivery(context.WithoutCancel(ctx), o); err != nil {
		h.d.Log.Warn("webhook delivery not settled", "delivery", d.ID, "err", err)
	} else if !ok {
		h.d.Log.Warn("webhook delivery lease lost before settling; it may be sent again", "delivery", d.ID)
	}
	if o.Error != "" {
		h.d.Log.Info("webhook delivery attempt failed", "webhook", d.WebhookID, "delivery", d.ID, "attempt", d.Attempts,
			"outcome", outcome, "err", o.Error)
	}
	return o.State
}

// Run delivers until ctx ends: a round whenever one is due (every poll, at
// once after a full round, or when nudged), pruning the delivery log and
// refreshing the pending gauge about once a minute.
func (h *WebhookDeliverer) Run(ctx context.Context, poll time.Duration) {
	t := time.NewTicker(poll)
	defer t.Stop()
	var housekept time.Time
	for {
		for {
			r, err := h.DeliverDue(ctx)
			if err != nil && ctx.Err() == nil {
				h.d.Log.Warn("webhook delivery round", "err", err)
			}
			if err != nil || r.Attempted < h.d.Batch || ctx.Err() != nil {
				break
			}
		}
		if time.Since(housekept) > time.Minute {
			housekept = time.Now()
			h.housekeep(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-h.nudge:
		}
	}
}

func (h *WebhookDeliverer) housekeep(ctx context.Context) {
	for {
		n, err := h.d.Store.PruneDeliveries(ctx, webhookNow(h.d.Clock).Add(-h.d.LogRetention), 1000)
		if err != nil {
			if ctx.Err() == nil {
				h.d.Log.Warn("webhook delivery log prune", "err", err)
			}
			break
		}
		if n < 1000 {
			break
		}
	}
	if n, err := h.d.Store.CountPendingDeliveries(ctx); err == nil {
		h.d.Metrics.WebhookPending(n)
	}
}

// errPrivateFailed is the whole log entry of a failed attempt on a
// private, loopback or link-local address (alerts.block_private_addresses
// off): no status, body, transport error or latency.
const errPrivateFailed = "delivery failed (private address: the outcome is not recorded in detail)"
