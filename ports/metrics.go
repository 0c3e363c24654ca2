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
	MCPMetrics
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
	// ViolationRecorded counts one validation issue worse than info on a
	// step of a contract thread, by contract name, issue type (the rule
	// broken: invalid_transition, missing_required_field, …) and severity.
	ViolationRecorded(contract, issueType, severity string)
	// StepRefused counts one step submission refused by its contract before
	// anything was recorded, by error code (content_rule_failed) and
	// contract name.
	StepRefused(code, contract string)
}

// SessionMetrics track open WebSocket connections.
type SessionMetrics interface {
	// SessionOpened and SessionClosed track open WebSocket connections.
	SessionOpened()
	SessionClosed()
	// ActionHandled records one WebSocket frame answered: its action (the
	// adapter maps names it does not know to "unknown"), the error code of
	// its refusal ("" when it succeeded) and how long handling it took.
	ActionHandled(action, code string, latency time.Duration)
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
	// DeliveryLag records, for a notification's first push, the time from
	// its creation (the step's commit) to the push being queued on a
	// subscriber's socket.
	DeliveryLag(lag time.Duration)
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
	// GraphQLOperation records one GraphQL request (HTTP or MCP) by
	// operation name as the client sent it ("" when anonymous; the adapter
	// bounds the label set), the code of each error in its response —
	// resolver errors of an executed operation (HTTP 200) included — and how
	// long it took.
	GraphQLOperation(operation string, codes []string, latency time.Duration)
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
	// WebhookDelivered records the time from a delivery's event (the
	// outbox row's creation) to the receiver accepting it.
	WebhookDelivered(lag time.Duration)
}

// AlertMetrics count the alert sweep's alerts.
type AlertMetrics interface {
	// AlertRecorded counts one alert the sweep recorded on a thread, by
	// condition (overdue, silent).
	AlertRecorded(condition string)
}

// MCPMetrics measure MCP tool calls.
type MCPMetrics interface {
	// MCPToolCall records one tools/call by tool name (the adapter maps
	// unknown names to "unknown"), the error code ("" on success) and how
	// long it took.
	MCPToolCall(tool, code string, latency time.Duration)
}

// NopMetrics discards every event (tests and tools that serve no /metrics).
type NopMetrics struct{}

var _ Metrics = NopMetrics{}

func (NopMetrics) StepRecorded(string, string)                      {}
func (NopMetrics) ValidationRecorded(string, string)                {}
func (NopMetrics) ThreadStarted(string)                             {}
func (NopMetrics) ThreadEnded(string)                               {}
func (NopMetrics) SessionOpened()                                   {}
func (NopMetrics) SessionClosed()                                   {}
func (NopMetrics) NotificationsPending(int)                         {}
func (NopMetrics) NotificationDelivered()                           {}
func (NopMetrics) NotificationRedelivered()                         {}
func (NopMetrics) NotificationExpired()                             {}
func (NopMetrics) SpansAccepted(int)                                {}
func (NopMetrics) SpansRejected(int)                                {}
func (NopMetrics) CommitBatch(int, time.Duration)                   {}
func (NopMetrics) GraphQLCost(int)                                  {}
func (NopMetrics) GraphQLRefused(string)                            {}
func (NopMetrics) AuthFailed(string, string)                        {}
func (NopMetrics) WebhookAttempt(string, time.Duration)             {}
func (NopMetrics) WebhookPending(int)                               {}
func (NopMetrics) AlertRecorded(string)                             {}
func (NopMetrics) ViolationRecorded(string, string, string)         {}
func (NopMetrics) StepRefused(string, string)                       {}
func (NopMetrics) ActionHandled(string, string, time.Duration)      {}
func (NopMetrics) DeliveryLag(time.Duration)                        {}
func (NopMetrics) GraphQLOperation(string, []string, time.Duration) {}
func (NopMetrics) WebhookDelivered(time.Duration)                   {}
func (NopMetrics) MCPToolCall(string, string, time.Duration)        {}
func (NopMetrics) WaitsPending(int)                                 {}
func (NopMetrics) WaitRead()                                        {}
