package ports

import "time"

// Metrics receives the engine's operational events so operators can watch
// them (the Prometheus adapter counts them on /metrics). Methods never block
// and never fail; label values passed in must come from small, fixed sets
// (statuses, severities, contract names), never from request data.
type Metrics interface {
	ThreadMetrics
	SessionMetrics
	DeliveryMetrics
	SpanMetrics
	CommitMetrics
	GraphQLMetrics
	AuthMetrics
	WebhookMetrics
	AlertMetrics
}

// ThreadMetrics count what the thread use cases record.
type ThreadMetrics interface {
	// StepRecorded counts one appended step attempt (duplicates are not).
	StepRecorded(status, contract string)
	// ValidationRecorded counts one stored validation result by its overall
	// status (passed, warning, violated) and most severe issue ("none" when
	// it has none).
	ValidationRecorded(status, severity string)
	// ThreadStarted and ThreadEnded count thread lifecycle transitions.
	ThreadStarted(contract string)
	ThreadEnded(status string)
}

// SessionMetrics track open WebSocket connections.
type SessionMetrics interface {
	// SessionOpened and SessionClosed track open WebSocket connections.
	SessionOpened()
	SessionClosed()
}

// DeliveryMetrics count the notification hub's pushes.
type DeliveryMetrics interface {
	// NotificationsPending moves the number of notifications waiting for an
	// acknowledgement (queued, in flight or held for a reconnect) by delta.
	NotificationsPending(delta int)
	// NotificationDelivered counts an acknowledged push; Redelivered a push
	// sent again (not acknowledged in time, or its session closed); Expired a
	// notification given up on (too many deliveries, or held too long).
	NotificationDelivered()
	NotificationRedelivered()
	NotificationExpired()
	// WaitsPending moves the number of pending waitFor by delta; WaitRead
	// counts a read of what a wait waits for (one when it starts, one each
	// time its thread changes or its safety interval passes).
	WaitsPending(delta int)
	WaitRead()
}

// SpanMetrics count OTLP spans.
type SpanMetrics interface {
	// SpansAccepted and SpansRejected count OTLP spans by outcome.
	SpansAccepted(n int)
	SpansRejected(n int)
}

// CommitMetrics measure the thread store's group commits.
type CommitMetrics interface {
	// CommitBatch records one committed group-commit transaction: how many
	// step appends it held and how long the transaction took.
	CommitBatch(size int, latency time.Duration)
}

// GraphQLMetrics measure GraphQL operations.
type GraphQLMetrics interface {
	// GraphQLCost records the computed cost of an executed operation;
	// GraphQLRefused counts one refused before execution (reason: complexity,
	// invalid — too deep, a fragment cycle, no runnable operation — or size).
	GraphQLCost(cost int)
	GraphQLRefused(reason string)
}

// AuthMetrics count refused credentials.
type AuthMetrics interface {
	// AuthFailed counts a refused credential by method (api_key, session)
	// and the error code returned.
	AuthFailed(method, code string)
}

// WebhookMetrics measure alert webhook deliveries.
type WebhookMetrics interface {
	// WebhookAttempt records one webhook delivery attempt by outcome
	// (delivered, retry, failed) and how long the receiver took.
	WebhookAttempt(outcome string, latency time.Duration)
	// WebhookPending sets the number of outbox rows not settled yet.
	WebhookPending(n int)
}

// AlertMetrics count the alert sweep's alerts.
type AlertMetrics interface {
	// AlertRecorded counts one alert the sweep recorded on a thread, by
	// condition (overdue, silent).
	AlertRecorded(condition string)
}

// NopMetrics discards every event (tests and tools that serve no /metrics).
type NopMetrics struct{}

var _ Metrics = NopMetrics{}

func (NopMetrics) StepRecorded(string, string)          {}
func (NopMetrics) ValidationRecorded(string, string)    {}
func (NopMetrics) ThreadStarted(string)                 {}
func (NopMetrics) ThreadEnded(string)                   {}
func (NopMetrics) SessionOpened()                       {}
func (NopMetrics) SessionClosed()                       {}
func (NopMetrics) NotificationsPending(int)             {}
func (NopMetrics) NotificationDelivered()               {}
func (NopMetrics) NotificationRedelivered()             {}
func (NopMetrics) NotificationExpired()                 {}
func (NopMetrics) WaitsPending(int)                     {}
func (NopMetrics) WaitRead()                            {}
func (NopMetrics) SpansAccepted(int)                    {}
func (NopMetrics) SpansRejected(int)                    {}
func (NopMetrics) CommitBatch(int, time.Duration)       {}
func (NopMetrics) GraphQLCost(int)                      {}
func (NopMetrics) GraphQLRefused(string)                {}
func (NopMetrics) AuthFailed(string, string)            {}
func (NopMetrics) WebhookAttempt(string, time.Duration) {}
func (NopMetrics) WebhookPending(int)                   {}
func (NopMetrics) AlertRecorded(string)                 {}
