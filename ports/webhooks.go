package ports

import (
	"context"
	"encoding/json"
	"time"

	"github.com/threadengine/engine/domain"
)

// Webhook is one admin-managed alert receiver.
type Webhook struct {
	ID     string
	Name   string
	URL    string
	Secret string // whsec_…, shown once to the administrator who creates it
	Format domain.WebhookFormat
	Events []domain.WebhookEvent
	// MinSeverity is the weakest validation.violated issue delivered.
	MinSeverity domain.Severity
	Enabled     bool
	CreatedBy   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// DeliveryState is where a delivery is: pending (waiting for an attempt or
// in one), delivered (a 2xx answer) or failed (attempts exhausted).
type DeliveryState string

const (
	DeliveryPending   DeliveryState = "pending"
	DeliveryDelivered DeliveryState = "delivered"
	DeliveryFailed    DeliveryState = "failed"
)

// WebhookDelivery is one outbox row: an alert (or a test) for one webhook,
// with the outcome of its latest attempt.
type WebhookDelivery struct {
	ID             string // also the webhook-id header, the same on every attempt
	WebhookID      string
	NotificationID string // "" for a test
	EventType      domain.WebhookEvent
	ThreadID       string
	Payload        []byte // the JSON domain.WebhookPayload
	State          DeliveryState
	Attempts       int
	NextAttemptAt  time.Time
	LastStatus     int // HTTP status of the latest attempt (0: none, or no answer)
	LastError      string
	LastLatency    time.Duration
	LastAttemptAt  *time.Time
	CreatedAt      time.Time
	SettledAt      *time.Time
}

// DeliveryJob is a leased delivery with what sending it needs.
type DeliveryJob struct {
	Delivery   WebhookDelivery // Attempts counts this attempt
	URL        string
	Secret     string
	Format     domain.WebhookFormat
	LeaseToken string
	// TraceParent is the W3C traceparent of the step that raised the
	// alert ("" when untraced or for a test), so the delivery joins its trace.
	TraceParent string
}

// DeliveryOutcome settles or reschedules one leased attempt.
type DeliveryOutcome struct {
	ID, LeaseToken string
	State          DeliveryState // pending: retry at NextAttemptAt
	NextAttemptAt  time.Time
	At             time.Time
	Status         int
	Error          string
	Latency        time.Duration
	// Interrupted: the engine itself stopped the attempt (shutdown); it is
	// not counted, and the delivery stays pending for the next claimer.
	Interrupted bool
}

// WebhookStore keeps webhooks and their delivery outbox, shared by every
// replica.
type WebhookStore interface {
	CreateWebhook(ctx context.Context, w Webhook) error
	GetWebhook(ctx context.Context, id string) (Webhook, error)
	ListWebhooks(ctx context.Context) ([]Webhook, error)
	// UpdateWebhook applies fn to the stored webhook and saves it.
	UpdateWebhook(ctx context.Context, id string, fn func(*Webhook) error) (Webhook, error)
	// DeleteWebhook deletes the webhook and its deliveries.
	DeleteWebhook(ctx context.Context, id string) error
	// EnqueueDelivery adds one delivery (send test).
	EnqueueDelivery(ctx context.Context, d WebhookDelivery) error
	// ClaimDeliveries leases up to limit pending deliveries due at now whose
	// lease is free, until until, under token, counting one more attempt on
	// each; a delivery leased by one caller is not returned to another
	// before the lease ends. Deliveries of disabled webhooks are skipped.
	ClaimDeliveries(ctx context.Context, now, until time.Time, token string, limit int) ([]DeliveryJob, error)
	// SettleDelivery records an attempt's outcome if the lease is still
	// the caller's (false otherwise: the lease ran out and another replica
	// may have taken the row).
	SettleDelivery(ctx context.Context, o DeliveryOutcome) (bool, error)
	// ListDeliveries returns the webhook's latest deliveries, newest first.
	ListDeliveries(ctx context.Context, webhookID string, limit int) ([]WebhookDelivery, error)
	// PruneDeliveries deletes up to limit settled deliveries settled before
	// before; it returns how many.
	PruneDeliveries(ctx context.Context, before time.Time, limit int) (int, error)
	// CountPendingDeliveries counts the outbox rows not settled yet.
	CountPendingDeliveries(ctx context.Context) (int, error)
}

// WebhookRequest is one signed POST.
type WebhookRequest struct {
	URL     string
	Headers map[string]string
	Body    []byte
	// TraceParent, when set, is the trace the request continues (the
	// sender adds its own traceparent header to the request).
	TraceParent string
}

// WebhookResponse is what came back: the status (0 when none) and at most
// a few KiB of the body, for the delivery log. Private, also set with an
// error, says the address dialled was loopback, private or link-local
// (reachable because alerts.block_private_addresses is off): the log then
// records a coded outcome only, so it cannot be used to read internal
// services or tell their open ports from closed ones.
type WebhookResponse struct {
	Status  int
	Body    string
	Private bool
}

// WebhookSender posts one request with a bounded timeout and response
// read; a transport failure (refused, timeout, refused address) is an error.
type WebhookSender interface {
	Send(ctx context.Context, r WebhookRequest) (WebhookResponse, error)
}

// ThreadAlert is what the alert sweep records on a thread: a validation
// result without a step, its notifications (fanned out to webhooks in the
// same transaction) and the thread's updated health.
type ThreadAlert struct {
	// Episode is the time the condition is measured from (the thread's
	// start for overdue, its last update for silent): a condition is
	// flagged once per episode, so a thread that falls silent, wakes up
	// and falls silent again is flagged twice.
	Episode       time.Time
	Validation    ValidationRecord
	Notifications []NotificationRecord
}

// AlertSweepStore finds active threads past a time limit and records an
// alert on each at most once per condition.
type AlertSweepStore interface {
	// OverdueThreads returns up to limit active threads of one contract
	// version created before startedBefore (and, unless startedAfter is
	// zero, not before startedAfter) and not yet flagged overdue.
	OverdueThreads(ctx context.Context, contract string, version int, startedAfter, startedBefore time.Time, limit int) ([]string, error)
	// SilentThreads returns up to limit active threads last updated before
	// updatedBefore (and, unless updatedAfter is zero, not before
	// updatedAfter) and not yet flagged silent.
	SilentThreads(ctx context.Context, updatedAfter, updatedBefore time.Time, limit int) ([]string, error)
	// RecordThreadAlert locks the thread and calls fn; when fn returns ok,
	// it flags (thread, condition, episode) and writes the alert and the
	// thread (health) in the same transaction. It returns false, writing
	// nothing, when fn declines or the condition was already flagged for
	// that episode or a later one (by any replica).
	RecordThreadAlert(ctx context.Context, threadID, condition string, fn func(t *domain.Thread) (ThreadAlert, bool)) (bool, error)
}

// AlertRow is the outbox content an alert notification fans out to every
// matching webhook, in the notification's transaction.
type AlertRow struct {
	Event   domain.WebhookEvent
	Rank    int // severity rank webhooks' min_rank must reach (0: any)
	Payload []byte
}

// AlertOf maps a notification to its alert (false when no webhook event
// covers it). Stores call it as they insert notifications.
func AlertOf(n NotificationRecord) (AlertRow, bool) {
	ev, rank, ok := domain.AlertOf(n.NotificationType, n.ViolationType, n.Severity)
	if !ok {
		return AlertRow{}, false
	}
	p := domain.WebhookPayload{Type: ev, Timestamp: n.CreatedAt.UTC(), Data: domain.WebhookPayloadData{
		ThreadID: n.ThreadID, ContractName: n.ContractName, StepID: n.StepID, StepStatus: n.StepStatus,
		Severity: n.Severity, ViolationType: n.ViolationType, Message: n.Message, NotificationID: n.ID}}
	if n.StepName != "global" {
		p.Data.StepName = n.StepName
	}
	if ev == domain.EventStepFailed {
		// The SDK's execution.failed notification carries severity
		// "warning" (the wire protocol's value); a webhook's severity is a
		// contract issue's, which a failed step does not have: receivers
		// that route by it would page on every failed attempt.
		p.Data.Severity = ""
	}
	body, err := json.Marshal(p)
	if err != nil {
		return AlertRow{}, false
	}
	return AlertRow{Event: ev, Rank: rank, Payload: body}, true
}
