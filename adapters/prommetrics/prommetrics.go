// Package prommetrics implements ports.Metrics with Prometheus collectors on
// the engine's per-server registry (served at /metrics).
package prommetrics

import (
	"database/sql"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Metrics counts engine events. Every metric is named threadengine_*.
type Metrics struct {
	steps         *prometheus.CounterVec
	validations   *prometheus.CounterVec
	threadsStart  *prometheus.CounterVec
	threadsEnd    *prometheus.CounterVec
	sessions      prometheus.Gauge
	notifPending  prometheus.Gauge
	notifDeliv    prometheus.Counter
	notifRedeliv  prometheus.Counter
	notifExpired  prometheus.Counter
	waitsPending  prometheus.Gauge
	waitReads     prometheus.Counter
	spans         *prometheus.CounterVec
	batchSize     prometheus.Histogram
	commitLatency prometheus.Histogram
	gqlCost       prometheus.Histogram
	gqlRefused    *prometheus.CounterVec
	authFailures  *prometheus.CounterVec
	whAttempts    *prometheus.CounterVec
	whLatency     prometheus.Histogram
	whPending     prometheus.Gauge
	alerts        *prometheus.CounterVec
	violations    *prometheus.CounterVec
	refusals      *prometheus.CounterVec
	deliveryLag   prometheus.Histogram
	whLag         prometheus.Histogram
	activeThreads *prometheus.GaugeVec
	wsActions     red
	gqlOps        red
	gqlOpNames    *boundedLabel
	mcpTools      red
}

var _ ports.Metrics = (*Metrics)(nil)

// New registers the engine metrics on reg, and the database pool statistics
// of db when it is not nil. Every series of a fixed label set, and of the
// known values in known, is created at 0.
func New(reg prometheus.Registerer, db *sql.DB, known Labels) *Metrics {
	m := &Metrics{
		steps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "threadengine_steps_recorded_total",
			Help: "Step attempts appended, by step status and contract name (\"none\" for free-form threads)."}, []string{"status", "contract"}),
		validations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "threadengine_validations_total",
			Help: "Contract validation results stored, by overall status and most severe issue (\"none\" without issues)."}, []string{"status", "severity"}),
		threadsStart: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "threadengine_threads_started_total",
			Help: "Threads started, by contract name (\"none\" for free-form threads)."}, []string{"contract"}),
		threadsEnd: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "threadengine_threads_ended_total",
			Help: "Threads ended, by final status (completed, failed, cancelled)."}, []string{"status"}),
		sessions: prometheus.NewGauge(prometheus.GaugeOpts{Name: "threadengine_websocket_sessions_open",
			Help: "Open WebSocket connections."}),
		notifPending: prometheus.NewGauge(prometheus.GaugeOpts{Name: "threadengine_notifications_pending",
			Help: "Pushes of this process waiting for an acknowledgement (in flight to one of its sessions)."}),
		notifDeliv: prometheus.NewCounter(prometheus.CounterOpts{Name: "threadengine_notifications_delivered_total",
			Help: "Notification pushes acknowledged by a subscriber."}),
		notifRedeliv: prometheus.NewCounter(prometheus.CounterOpts{Name: "threadengine_notifications_redelivered_total",
			Help: "Notification pushes sent again after no acknowledgement in time or a closed session."}),
		waitsPending: prometheus.NewGauge(prometheus.GaugeOpts{Name: "threadengine_waits_pending",
			Help: "waitFor requests waiting for a decision."}),
		waitReads: prometheus.NewCounter(prometheus.CounterOpts{Name: "threadengine_wait_reads_total",
			Help: "Reads of the database by waitFor: one when a wait starts, one each time its thread changes (or its safety interval passes)."}),
		notifExpired: prometheus.NewCounter(prometheus.CounterOpts{Name: "threadengine_notifications_expired_total",
			Help: "Notifications given up on: too many unacknowledged deliveries, or held longer than the reconnect window."}),
		spans: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "threadengine_otlp_spans_total",
			Help: "OTLP spans received, by outcome (accepted, rejected)."}, []string{"outcome"}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "threadengine_commit_batch_size",
			Help: "Step appends per group-commit transaction.", Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128}}),
		commitLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "threadengine_commit_duration_seconds",
			Help:    "Duration of one group-commit transaction (begin to commit).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}}),
		gqlCost: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "threadengine_graphql_cost",
			Help: "Computed cost of executed GraphQL operations.", Buckets: []float64{1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000}}),
		gqlRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "threadengine_graphql_refused_total",
			Help: "GraphQL operations refused before execution, by reason (complexity, invalid, size)."}, []string{"reason"}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "threadengine_auth_failures_total",
			Help: "Refused credentials, by method (api_key, session) and error code."}, []string{"method", "code"}),
		whAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "threadengine_webhook_attempts_total",
			Help: "Webhook delivery attempts, by outcome (delivered, retry, failed)."}, []string{"outcome"}),
		whLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "threadengine_webhook_attempt_duration_seconds",
			Help:    "Duration of one webhook delivery attempt (request sent to response read, or failure).",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}),
		whPending: prometheus.NewGauge(prometheus.GaugeOpts{Name: "threadengine_webhook_deliveries_pending",
			Help: "Webhook outbox rows waiting for delivery or a retry."}),
		alerts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "threadengine_alerts_recorded_total",
			Help: "Alerts the sweep recorded on threads, by condition (overdue, silent)."}, []string{"condition"}),
	}
	m.violations = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "threadengine_violations_total",
		Help: "Validation issues worse than info on contract threads, by contract name, rule (issue type) and severity."},
		[]string{"contract", "rule", "severity"})
	m.deliveryLag = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "threadengine_notification_delivery_lag_seconds",
		Help:    "Time from a notification's creation (its step's commit) to its first push to a subscriber.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}})
	m.whLag = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "threadengine_webhook_delivery_lag_seconds",
		Help:    "Time from a webhook event (its outbox row) to the receiver accepting it, retries included.",
		Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 14400, 86400}})
	m.activeThreads = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "threadengine_threads_active",
		Help: "Active threads in the database, by health (OK, WARNING, VIOLATED, FAILED); refreshed periodically."},
		[]string{"health"})
	m.wsActions = newRED("threadengine_websocket_action", "action", "WebSocket frames handled")
	m.gqlOps = newRED("threadengine_graphql_operation", "operation", "GraphQL operations (HTTP and MCP)")
	m.mcpTools = newRED("threadengine_mcp_tool_call", "tool", "MCP tool calls")
	m.gqlOpNames = newBoundedLabel(append([]string{OperationAnonymous}, known.GraphQLOperations...), MaxGraphQLOperations, OperationOther)
	m.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "threadengine_step_refusals_total",
		Help: "Step submissions a contract refused before recording them (content rules), by error code and contract name."},
		[]string{"code", "contract"})
	m.refusals.WithLabelValues(string(domain.CodeContentRuleFailed), "none")
	reg.MustRegister(m.violations, m.refusals, m.deliveryLag, m.whLag, m.activeThreads)
	for _, r := range []red{m.wsActions, m.gqlOps, m.mcpTools} {
		r.register(reg)
	}
	for _, a := range known.WSActions {
		m.wsActions.preset(a)
	}
	for _, op := range append([]string{OperationAnonymous, OperationOther}, known.GraphQLOperations...) {
		m.gqlOps.preset(op)
	}
	for _, t := range known.MCPTools {
		m.mcpTools.preset(t)
	}
	for _, h := range domain.HealthStatuses {
		m.activeThreads.WithLabelValues(string(h))
	}
	m.preset()
	reg.MustRegister(m.whAttempts, m.whLatency, m.whPending, m.alerts)
	for _, o := range []string{"delivered", "retry", "failed"} {
		m.whAttempts.WithLabelValues(o)
	}
	for _, c := range []string{"overdue", "silent"} {
		m.alerts.WithLabelValues(c)
	}
	reg.MustRegister(m.steps, m.validations, m.threadsStart, m.threadsEnd, m.sessions, m.notifPending, m.notifDeliv,
		m.notifRedeliv, m.notifExpired, m.waitsPending, m.waitReads, m.spans, m.batchSize, m.commitLatency, m.gqlCost, m.gqlRefused, m.authFailures)
	// Zero series for the outcomes operators alert on, so rate() and
	// dashboards work before the first event.
	m.spans.WithLabelValues("accepted")
	m.spans.WithLabelValues("rejected")
	if db != nil {
		reg.MustRegister(collectors.NewDBStatsCollector(db, "threadengine"))
	}
	return m
}

// preset creates at 0 every series of the fixed label sets, so a rate or an
// alert on one of them works before its first event (validations by the
// outcomes a severity can give, ended threads by final status, refusals by
// reason, refused credentials by method and the codes each can give, steps
// and starts of free-form threads).
func (m *Metrics) preset() {
	for status, sevs := range map[string][]string{
		domain.ValidationPassed:   {"none", string(domain.SeverityInfo)},
		domain.ValidationWarning:  {string(domain.SeverityMinor), string(domain.SeverityWarning)},
		domain.ValidationViolated: {string(domain.SeverityCritical), string(domain.SeverityMajor)},
	} {
		for _, sev := range sevs {
			m.validations.WithLabelValues(status, sev)
		}
	}
	for _, st := range []domain.ThreadStatus{domain.ThreadCompleted, domain.ThreadFailed, domain.ThreadCancelled} {
		m.threadsEnd.WithLabelValues(string(st))
	}
	for _, r := range []string{"complexity", "invalid", "size"} {
		m.gqlRefused.WithLabelValues(r)
	}
	for _, c := range []domain.Code{domain.CodeUnauthenticated, domain.CodeAPIKeyRevoked, domain.CodeAPIKeyExpired, domain.CodeUserNotActive} {
		m.authFailures.WithLabelValues("api_key", string(c))
	}
	for _, c := range []domain.Code{domain.CodeUnauthenticated, domain.CodeSessionExpired, domain.CodeSessionRevoked, domain.CodeUserNotActive} {
		m.authFailures.WithLabelValues("session", string(c))
	}
	for _, st := range domain.StepStatuses {
		m.steps.WithLabelValues(string(st), "none")
	}
	m.threadsStart.WithLabelValues("none")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func (m *Metrics) StepRecorded(status, contract string) {
	m.steps.WithLabelValues(status, orNone(contract)).Inc()
}
func (m *Metrics) ValidationRecorded(status, severity string) {
	m.validations.WithLabelValues(status, orNone(severity)).Inc()
}
func (m *Metrics) ThreadStarted(contract string) {
	m.threadsStart.WithLabelValues(orNone(contract)).Inc()
}
func (m *Metrics) ThreadEnded(status string) { m.threadsEnd.WithLabelValues(status).Inc() }
func (m *Metrics) SessionOpened()            { m.sessions.Inc() }
func (m *Metrics) SessionClosed()            { m.sessions.Dec() }
func (m *Metrics) NotificationsPending(delta int) {
	m.notifPending.Add(float64(delta))
}
func (m *Metrics) NotificationDelivered()   { m.notifDeliv.Inc() }
func (m *Metrics) NotificationRedelivered() { m.notifRedeliv.Inc() }
func (m *Metrics) NotificationExpired()     { m.notifExpired.Inc() }
func (m *Metrics) WaitsPending(delta int)   { m.waitsPending.Add(float64(delta)) }
func (m *Metrics) WaitRead()                { m.waitReads.Inc() }
func (m *Metrics) SpansAccepted(n int) {
	if n > 0 {
		m.spans.WithLabelValues("accepted").Add(float64(n))
	}
}
func (m *Metrics) SpansRejected(n int) {
	if n > 0 {
		m.spans.WithLabelValues("rejected").Add(float64(n))
	}
}
func (m *Metrics) CommitBatch(size int, latency time.Duration) {
	m.batchSize.Observe(float64(size))
	m.commitLatency.Observe(latency.Seconds())
}
func (m *Metrics) GraphQLCost(cost int)           { m.gqlCost.Observe(float64(cost)) }
func (m *Metrics) GraphQLRefused(reason string)   { m.gqlRefused.WithLabelValues(reason).Inc() }
func (m *Metrics) AuthFailed(method, code string) { m.authFailures.WithLabelValues(method, code).Inc() }

// WebhookAttempt: see ports.Metrics.
func (m *Metrics) WebhookAttempt(outcome string, latency time.Duration) {
	m.whAttempts.WithLabelValues(outcome).Inc()
	m.whLatency.Observe(latency.Seconds())
}

// WebhookPending: see ports.Metrics.
func (m *Metrics) WebhookPending(n int) { m.whPending.Set(float64(n)) }

// AlertRecorded: see ports.Metrics.
func (m *Metrics) AlertRecorded(condition string) { m.alerts.WithLabelValues(condition).Inc() }
