package portstest

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Webhooks is an in-memory ports.WebhookStore: webhooks and the delivery
// outbox, leased and settled as the SQL store does.
type Webhooks struct {
	mu         sync.Mutex
	hooks      map[string]ports.Webhook
	deliveries map[string]ports.WebhookDelivery
	leases     map[string]lease
}

type lease struct {
	until time.Time
	token string
}

var _ ports.WebhookStore = (*Webhooks)(nil)

// NewWebhooks returns an empty store.
func NewWebhooks() *Webhooks {
	return &Webhooks{hooks: map[string]ports.Webhook{}, deliveries: map[string]ports.WebhookDelivery{}, leases: map[string]lease{}}
}

func copyHook(w ports.Webhook) ports.Webhook {
	w.Events = append([]domain.WebhookEvent{}, w.Events...)
	w.CreatedAt, w.UpdatedAt = stored(w.CreatedAt), stored(w.UpdatedAt)
	return w
}

// CreateWebhook: see ports.WebhookStore.
func (s *Webhooks) CreateWebhook(_ context.Context, w ports.Webhook) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks[w.ID] = copyHook(w)
	return nil
}

// GetWebhook: see ports.WebhookStore.
func (s *Webhooks) GetWebhook(_ context.Context, id string) (ports.Webhook, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.hooks[id]
	if !ok {
		return ports.Webhook{}, domain.NotFound("webhook")
	}
	return copyHook(w), nil
}

// ListWebhooks: see ports.WebhookStore.
func (s *Webhooks) ListWebhooks(context.Context) ([]ports.Webhook, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ports.Webhook, 0, len(s.hooks))
	for _, w := range s.hooks {
		out = append(out, copyHook(w))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) || out[i].ID < out[j].ID })
	return out, nil
}

// UpdateWebhook: see ports.WebhookStore.
func (s *Webhooks) UpdateWebhook(_ context.Context, id string, fn func(*ports.Webhook) error) (ports.Webhook, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.hooks[id]
	if !ok {
		return ports.Webhook{}, domain.NotFound("webhook")
	}
	w = copyHook(w)
	if err := fn(&w); err != nil {
		return ports.Webhook{}, err
	}
	s.hooks[id] = copyHook(w)
	return copyHook(w), nil
}

// DeleteWebhook: see ports.WebhookStore.
func (s *Webhooks) DeleteWebhook(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.hooks[id]; !ok {
		return domain.NotFound("webhook")
	}
	delete(s.hooks, id)
	for k, d := range s.deliveries {
		if d.WebhookID == id {
			delete(s.deliveries, k)
		}
	}
	return nil
}

// EnqueueDelivery: see ports.WebhookStore.
func (s *Webhooks) EnqueueDelivery(_ context.Context, d ports.WebhookDelivery) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d.State = ports.DeliveryPending
	d.NextAttemptAt, d.CreatedAt = stored(d.NextAttemptAt), stored(d.CreatedAt)
	s.deliveries[d.ID] = d
	return nil
}

// ClaimDeliveries: see ports.WebhookStore.
func (s *Webhooks) ClaimDeliveries(_ context.Context, now, until time.Time, token string, limit int) ([]ports.DeliveryJob, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var due []ports.WebhookDelivery
	for _, d := range s.deliveries {
		w, ok := s.hooks[d.WebhookID]
		l := s.leases[d.ID]
		if ok && w.Enabled && d.State == ports.DeliveryPending && !d.NextAttemptAt.After(now) && (l.token == "" || l.until.Before(now)) {
			due = append(due, d)
		}
	}
	sort.Slice(due, func(i, j int) bool { return due[i].NextAttemptAt.Before(due[j].NextAttemptAt) })
	if len(due) > limit {
		due = due[:limit]
	}
	out := make([]ports.DeliveryJob, len(due))
	for i, d := range due {
		d.Attempts++
		s.deliveries[d.ID] = d
		s.leases[d.ID] = lease{until: until, token: token}
		w := s.hooks[d.WebhookID]
		out[i] = ports.DeliveryJob{Delivery: d, URL: w.URL, Secret: w.Secret, Format: w.Format, LeaseToken: token}
	}
	return out, nil
}

// SettleDelivery: see ports.WebhookStore.
func (s *Webhooks) SettleDelivery(_ context.Context, o ports.DeliveryOutcome) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.deliveries[o.ID]
	if !ok || d.State != ports.DeliveryPending || s.leases[o.ID].token != o.LeaseToken {
		return false, nil
	}
	delete(s.leases, o.ID)
	if o.Interrupted {
		d.Attempts--
		s.deliveries[o.ID] = d
		return true, nil
	}
	at := stored(o.At)
	d.State, d.LastStatus, d.LastError, d.LastLatency, d.LastAttemptAt = o.State, o.Status, o.Error, o.Latency.Truncate(time.Millisecond), &at
	if o.State == ports.DeliveryPending {
		d.NextAttemptAt = stored(o.NextAttemptAt)
	} else {
		d.NextAttemptAt, d.SettledAt = at, &at
	}
	s.deliveries[o.ID] = d
	return true, nil
}

// ListDeliveries: see ports.WebhookStore.
func (s *Webhooks) ListDeliveries(_ context.Context, webhookID string, limit int) ([]ports.WebhookDelivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ports.WebhookDelivery
	for _, d := range s.deliveries {
		if d.WebhookID == webhookID {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID > out[j].ID
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// PruneDeliveries: see ports.WebhookStore.
func (s *Webhooks) PruneDeliveries(_ context.Context, before time.Time, limit int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, d := range s.deliveries {
		if n < limit && d.State != ports.DeliveryPending && d.SettledAt != nil && d.SettledAt.Before(before) {
			delete(s.deliveries, k)
			n++
		}
	}
	return n, nil
}

// CountPendingDeliveries: see ports.WebhookStore.
func (s *Webhooks) CountPendingDeliveries(context.Context) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, d := range s.deliveries {
		if d.State == ports.DeliveryPending {
			n++
		}
	}
	return n, nil
}
