// Package limits names every limit the engine enforces and counts refusals
// per limit on the server's Prometheus registry
// (threadengine_limit_refusals_total{limit="…"}), so an operator sees which
// limit clients hit. Adapters hold a *Counter; a nil one counts nothing.
package limits

import "github.com/prometheus/client_golang/prometheus"

// Name identifies one limit; it is the metric's label value and appears in
// the refusal's details, so it is stable.
type Name string

const (
	HTTPReadTimeout        Name = "http_read_timeout"
	BodyBytes              Name = "body_bytes"
	OTLPBodyBytes          Name = "otlp_body_bytes"
	OTLPDecodedBytes       Name = "otlp_decoded_bytes"
	OTLPSpans              Name = "otlp_spans"
	OTLPObjects            Name = "otlp_objects"
	OTLPConcurrent         Name = "otlp_concurrent"
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
	// Reads (GraphQL, MCP, exports): app/readmodel.Gate's and the GraphQL
	// handler's names, docs/operators/limits.md "Reads".
	GraphQLConcurrent             Name = "graphql_concurrent"
	GraphQLConcurrentPerPrincipal Name = "graphql_concurrent_per_principal"
	GraphQLPoints                 Name = "graphql_points"
	GraphQLExpensive              Name = "graphql_expensive"
	GraphQLDuration               Name = "graphql_duration"
	GraphQLResponseBytes          Name = "graphql_response_bytes"
	ExportBytes                   Name = "export_bytes"
)

// All is every limit, so each is exported as 0 before its first refusal.
var All = []Name{HTTPReadTimeout, BodyBytes, OTLPBodyBytes, OTLPDecodedBytes, OTLPSpans, OTLPObjects, OTLPConcurrent,
	SignInFailures, WSConnectTimeout, WSSockets, WSUnauthenticated, WSPerPrincipal, WSSubscriptions,
	WSSubscriptionKeyBytes, WSMessageBytes, WSMessageFields, WSPreConnectBytes, WSUnauthPerAddress, WSCredentialsWithdrawn,
	ReplaysPerCaller, ReplaysRunning, WSWaitsPerSocket, WSWaitsPerPrincipal,
	GraphQLConcurrent, GraphQLConcurrentPerPrincipal, GraphQLPoints, GraphQLExpensive, GraphQLDuration, GraphQLResponseBytes, ExportBytes}

// Counter counts refusals by limit.
type Counter struct{ vec *prometheus.CounterVec }

// NewCounter registers threadengine_limit_refusals_total on reg.
func NewCounter(reg prometheus.Registerer) *Counter {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "threadengine_limit_refusals_total",
		Help: "Requests, connections or messages refused (or cut off) because they reached a limit, by limit.",
	}, []string{"limit"})
	for _, n := range All {
		vec.WithLabelValues(string(n))
	}
	reg.MustRegister(vec)
	return &Counter{vec: vec}
}

// Refused counts one refusal by limit n.
func (c *Counter) Refused(n Name) {
	if c == nil {
		return
	}
	c.vec.WithLabelValues(string(n)).Inc()
}
