// Package limits names every limit the engine enforces and counts refusals
// per limit on the server's Prometheus registry
// (threadengine_limit_refusals_total{limit="…"}), so an operator sees which
// limit clients hit. Adapters hold a *Counter; a nil one counts nothing.
package limits

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Name identifies one limit; it is the metric's label value and appears in
// the refusal's details, so it is stable.
type Name string

const (
	HTTPReadTimeout  Name = "http_read_timeout"
	BodyBytes        Name = "body_bytes"
	OTLPBodyBytes    Name = "otlp_body_bytes"
	OTLPDecodedBytes Name = "otlp_decoded_bytes"
	OTLPSpans        Name = "otlp_spans"
	OTLPObjects      Name = "otlp_objects"
	OTLPConcurrent   Name = "otlp_concurrent"
	// OTLPByteRate: a principal's OTLP requests decoded more bytes than
	// limits.otlp.bytes_per_second allows (429 with Retry-After).
	OTLPByteRate           Name = "otlp_byte_rate"
	SignInFailures         Name = "signin_failures"
	WSConnectTimeout       Name = "ws_connect_timeout"
	WSSockets              Name = "ws_sockets"
	WSUnauthenticated      Name = "ws_unauthenticated"
	WSPerPrincipal         Name = "ws_per_principal"
	WSSubscriptions        Name = "ws_subscriptions"
	WSSubscriptionKeyBytes Name = "ws_subscription_key_bytes"
	WSMessageBytes         Name = "ws_message_bytes"
	WSMessageFields        Name = "ws_message_fields"
	WSPreConnectBytes      Name = "ws_preconnect_bytes"
	WSUnauthPerAddress     Name = "ws_unauthenticated_per_address"
	WSCredentialsWithdrawn Name = "ws_credentials_withdrawn"
	// ReplaysPerCaller and ReplaysRunning cap contract replays
	// (app/contracts): one per caller, a few per replica.
	ReplaysPerCaller    Name = "replays_per_caller"
	ReplaysRunning      Name = "replays_running"
	WSWaitsPerSocket    Name = "ws_waits_per_socket"
	WSWaitsPerPrincipal Name = "ws_waits_per_principal"
	// WSFrameRate: a principal's sockets sent frames faster than
	// limits.ws.frames_per_second (answered rate_limited).
	WSFrameRate Name = "ws_frame_rate"
	// WSPendingBytes: a principal's sockets held more bytes of frames
	// (unfinished ones included) than its share; WSFramesInFlight: all
	// sockets together held the engine's whole frame budget. Both close
	// the socket that waited too long for room.
	WSPendingBytes   Name = "ws_pending_bytes"
	WSFramesInFlight Name = "ws_frames_in_flight"
	// WSMessageTimeout: a message (all its fragments) did not arrive within
	// 15 s of the engine starting to read it; the socket is closed.
	WSMessageTimeout Name = "ws_message_timeout"
	// Reads (GraphQL, MCP, exports): app/readgate.Gate's and the GraphQL
	// handler's names, docs/operators/limits.md "Reads".
	GraphQLConcurrent             Name = "graphql_concurrent"
	GraphQLConcurrentPerPrincipal Name = "graphql_concurrent_per_principal"
	GraphQLPoints                 Name = "graphql_points"
	GraphQLExpensive              Name = "graphql_expensive"
	GraphQLExpensiveTime          Name = "graphql_expensive_time"
	GraphQLPrincipalTime          Name = "graphql_principal_time"
	GraphQLDuration               Name = "graphql_duration"
	GraphQLResponseBytes          Name = "graphql_response_bytes"
	ExportBytes                   Name = "export_bytes"
	ExportThreadBytes             Name = "export_thread_bytes"
)

// All is every limit, so each is exported as 0 before its first refusal.
var All = []Name{HTTPReadTimeout, BodyBytes, OTLPBodyBytes, OTLPDecodedBytes, OTLPSpans, OTLPObjects, OTLPConcurrent, OTLPByteRate,
	SignInFailures, WSConnectTimeout, WSSockets, WSUnauthenticated, WSPerPrincipal, WSSubscriptions,
	WSSubscriptionKeyBytes, WSMessageBytes, WSMessageFields, WSPreConnectBytes, WSUnauthPerAddress, WSCredentialsWithdrawn,
	ReplaysPerCaller, ReplaysRunning, WSWaitsPerSocket, WSWaitsPerPrincipal, WSFrameRate, WSPendingBytes, WSFramesInFlight,
	WSMessageTimeout, GraphQLConcurrent, GraphQLConcurrentPerPrincipal, GraphQLPoints, GraphQLExpensive, GraphQLExpensiveTime, GraphQLPrincipalTime, GraphQLDuration,
	GraphQLResponseBytes, ExportBytes, ExportThreadBytes}

// Budget names a byte budget whose use is exported as
// threadengine_budget_bytes{budget} (held now, all holders together) and
// threadengine_budget_bytes_peak{budget} (the most one holder — a
// principal, or the engine for a global budget — ever held), so the bound
// is observable from outside the process.
type Budget string

const (
	// WSQueuedBytes: replies and pushes queued for a principal's sockets,
	// not yet written (limits.ws.max_queued_bytes_per_principal).
	WSQueuedBytes Budget = "ws_queued_bytes"
	// WSPendingBytesBudget: frames received (unfinished ones too) and not
	// yet handled, per principal (limits.ws.max_pending_bytes_per_principal).
	WSPendingBytesBudget Budget = "ws_pending_bytes"
	// WSFrameBytes: the same across every socket (fixed 16 MiB).
	WSFrameBytes Budget = "ws_frame_bytes"
)

var budgets = []Budget{WSQueuedBytes, WSPendingBytesBudget, WSFrameBytes}

// Counter counts refusals by limit and reports the bytes held against
// budgets.
type Counter struct {
	vec  *prometheus.CounterVec
	held *prometheus.GaugeVec
	peak *prometheus.GaugeVec

	mu    sync.Mutex
	peaks map[Budget]int64
}

// NewCounter registers threadengine_limit_refusals_total on reg.
func NewCounter(reg prometheus.Registerer) *Counter {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "threadengine_limit_refusals_total",
		Help: "Requests, connections or messages refused (or cut off) because they reached a limit, by limit.",
	}, []string{"limit"})
	for _, n := range All {
		vec.WithLabelValues(string(n))
	}
	held := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "threadengine_budget_bytes",
		Help: "Bytes held now against a byte budget, all holders together.",
	}, []string{"budget"})
	peak := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "threadengine_budget_bytes_peak",
		Help: "The most bytes one holder (a principal, or the engine for a global budget) held against a byte budget since start.",
	}, []string{"budget"})
	for _, b := range budgets {
		held.WithLabelValues(string(b))
		peak.WithLabelValues(string(b))
	}
	reg.MustRegister(vec, held, peak)
	return &Counter{vec: vec, held: held, peak: peak, peaks: map[Budget]int64{}}
}

// Held reports that one holder of budget b took (delta > 0) or gave back
// (delta < 0) bytes and now holds holderTotal.
func (c *Counter) Held(b Budget, delta, holderTotal int64) {
	if c == nil || c.held == nil {
		return
	}
	c.held.WithLabelValues(string(b)).Add(float64(delta))
	c.mu.Lock()
	defer c.mu.Unlock()
	if holderTotal > c.peaks[b] {
		c.peaks[b] = holderTotal
		c.peak.WithLabelValues(string(b)).Set(float64(holderTotal))
	}
}

// Refused counts one refusal by limit n.
func (c *Counter) Refused(n Name) {
	if c == nil {
		return
	}
	c.vec.WithLabelValues(string(n)).Inc()
}
