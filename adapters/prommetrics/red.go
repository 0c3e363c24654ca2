package prommetrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Labels are the label values known at start: every series of them is
// exported at 0 before its first event, so rate() and alerts work from the
// first scrape.
type Labels struct {
	// WSActions are the WebSocket protocol's action names (and connect,
	// and unknown for names it does not know).
	WSActions []string
	// GraphQLOperations are operation names known in advance (the SDKs'
	// queries); up to MaxGraphQLOperations more are added as clients send
	// them, then other.
	GraphQLOperations []string
	// MCPTools are the MCP tool names (and unknown).
	MCPTools []string
}

// MaxGraphQLOperations bounds the operation names, beyond the known ones,
// that get their own series; later names are counted as other.
const MaxGraphQLOperations = 50

// Operation labels that are not a client's name.
const (
	OperationAnonymous = "anonymous"
	OperationOther     = "other"
)

// latencyBuckets suit a request answered from memory or one database round
// trip up to a slow query or a long wait (waitFor).
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// red is one protocol's rate, errors and duration by a bounded key.
type red struct {
	calls    *prometheus.CounterVec   // key, outcome (ok, error)
	errors   *prometheus.CounterVec   // key, code
	duration *prometheus.HistogramVec // key
}

// newRED names its metrics after one (singular) thing: <one>s_total,
// <one>_errors_total and <one>_duration_seconds.
func newRED(one, key, what string) red {
	return red{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: one + "s_total",
			Help: what + ", by " + key + " and outcome (ok, error)."}, []string{key, "outcome"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: one + "_errors_total",
			Help: what + " answered with an error, by " + key + " and error code."}, []string{key, "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: one + "_duration_seconds",
			Help: "Duration of " + what + ", by " + key + ".", Buckets: latencyBuckets}, []string{key}),
	}
}

func (r red) register(reg prometheus.Registerer) {
	reg.MustRegister(r.calls, r.errors, r.duration)
}

// preset creates the key's series at 0 (errors have no series until a
// code is seen: codes are many, and the outcome=error series is what
// alerts watch).
func (r red) preset(key string) {
	r.calls.WithLabelValues(key, "ok")
	r.calls.WithLabelValues(key, "error")
	r.duration.WithLabelValues(key)
}

func (r red) observe(key string, codes []string, latency time.Duration) {
	outcome := "ok"
	if len(codes) > 0 {
		outcome = "error"
	}
	r.calls.WithLabelValues(key, outcome).Inc()
	for _, c := range codes {
		r.errors.WithLabelValues(key, orNone(c)).Inc()
	}
	r.duration.WithLabelValues(key).Observe(latency.Seconds())
}

// ActionHandled: see ports.SessionMetrics.
func (m *Metrics) ActionHandled(action, code string, latency time.Duration) {
	var codes []string
	if code != "" {
		codes = []string{code}
	}
	m.wsActions.observe(action, codes, latency)
}

// GraphQLOperation: see ports.GraphQLMetrics. The operation label is the
// client's name when known in advance or among the first
// MaxGraphQLOperations others, anonymous without a name, else other.
func (m *Metrics) GraphQLOperation(operation string, codes []string, latency time.Duration) {
	label := OperationAnonymous
	if operation != "" {
		var isNew bool
		if label, isNew = m.gqlOpNames.value(operation); isNew {
			m.gqlOps.preset(label)
		}
	}
	m.gqlOps.observe(label, codes, latency)
}

// MCPToolCall: see ports.MCPMetrics.
func (m *Metrics) MCPToolCall(tool, code string, latency time.Duration) {
	var codes []string
	if code != "" {
		codes = []string{code}
	}
	m.mcpTools.observe(tool, codes, latency)
}

// DeliveryLag: see ports.DeliveryMetrics.
func (m *Metrics) DeliveryLag(lag time.Duration) { m.deliveryLag.Observe(max(lag, 0).Seconds()) }

// WebhookDelivered: see ports.WebhookMetrics.
func (m *Metrics) WebhookDelivered(lag time.Duration) { m.whLag.Observe(max(lag, 0).Seconds()) }

// StepRefused: see ports.ThreadMetrics.
func (m *Metrics) StepRefused(code, contract string) {
	m.refusals.WithLabelValues(orNone(code), orNone(contract)).Inc()
}

// ViolationRecorded: see ports.ThreadMetrics.
func (m *Metrics) ViolationRecorded(contract, issueType, severity string) {
	m.violations.WithLabelValues(orNone(contract), orNone(issueType), orNone(severity)).Inc()
}
