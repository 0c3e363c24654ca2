package config

import (
	"fmt"
	"net/netip"
	"reflect"
	"runtime"
	"strings"
	"time"
)

// Limits bound what one client, request or socket can take from the engine.
// Every field is documented in docs/operators/limits.md with what the client
// receives when it is reached.
type Limits struct {
	HTTP   HTTPLimits   `koanf:"http"`
	OTLP   OTLPLimits   `koanf:"otlp"`
	WS     WSLimits     `koanf:"ws"`
	SignIn SignInLimits `koanf:"signin"`
	// GraphQL bounds reads: the GraphQL API, MCP (whose graphql_query
	// runs through it) and exports share the read pool.
	GraphQL ReadLimits `koanf:"graphql"`
}

// ReadLimits bound the database work and bytes of reads.
type ReadLimits struct {
	// MaxDuration is the deadline of one GraphQL operation or MCP tool call
	// (PostgreSQL's statement_timeout on the read pool too): a read cut by
	// it answers query_timeout.
	MaxDuration time.Duration `koanf:"max_duration"`
	// PoolConns is the size of the read pool, apart from the writers'
	// pool: reads never hold a connection a writer needs.
	PoolConns int `koanf:"pool_conns"`
	// MaxConcurrent operations run at once on this replica, and
	// MaxConcurrentPerPrincipal of one user or service account; others wait
	// up to QueueTimeout (within their own deadline), then get 429.
	MaxConcurrent             int           `koanf:"max_concurrent"`
	MaxConcurrentPerPrincipal int           `koanf:"max_concurrent_per_principal"`
	QueueTimeout              time.Duration `koanf:"queue_timeout"`
	// An operation costing at least ExpensiveCost points also needs one of
	// MaxExpensive places (default half the CPUs, at least 1: expensive
	// reads never take every core).
	ExpensiveCost int `koanf:"expensive_cost"`
	MaxExpensive  int `koanf:"max_expensive"`
	// ExpensiveShare is the share of the time (0 < share ≤ 1) expensive
	// operations may run on average on a replica; beyond it they are
	// refused 429 graphql_expensive_time with the wait as Retry-After.
	ExpensiveShare float64 `koanf:"expensive_share"`
	// PrincipalShare is the share of one core's time (0 < share ≤ 1) one
	// principal's reads may run on average on a replica, whatever their
	// price; beyond it they are refused 429 graphql_principal_time with the
	// wait as Retry-After.
	PrincipalShare float64 `koanf:"principal_share"`
	// PointsPerSecond and PointsBurst are one principal's read budget in
	// cost points (a token bucket): an operation whose cost is not in the
	// bucket is refused with 429 and Retry-After.
	PointsPerSecond int `koanf:"points_per_second"`
	PointsBurst     int `koanf:"points_burst"`
	// MaxResponseBytes is the most a GraphQL or MCP answer may hold; a
	// larger one is refused with limit_exceeded (nothing partial).
	MaxResponseBytes int `koanf:"max_response_bytes"`
	// ListContextBytes is the most of one attempt's context a list of
	// attempts returns; a longer context is cut and marked (read one
	// attempt at a time for the whole of it).
	ListContextBytes int `koanf:"list_context_bytes"`
	// ExportMaxBytes is the most one NDJSON export response streams; an
	// export reaching it ends with a truncation line naming where to go on.
	ExportMaxBytes int64 `koanf:"export_max_bytes"`
	// ExportThreadMaxBytes bounds the stored bytes (contexts, metadata) of
	// one thread an export loads at once: GET /v1/threads/{id}/export of a
	// larger thread is refused 413, a stream names it in a skipped line.
	ExportThreadMaxBytes int64 `koanf:"export_thread_max_bytes"`
}

// HTTPLimits are the HTTP server's timeouts.
type HTTPLimits struct {
	// ReadHeaderTimeout bounds the request line and headers (and the wait for
	// a new connection's first request).
	ReadHeaderTimeout time.Duration `koanf:"read_header_timeout"`
	// ReadTimeout bounds reading a whole request, body included; a slow body
	// is cut off after it. WebSockets are not affected once upgraded.
	ReadTimeout time.Duration `koanf:"read_timeout"`
	// IdleTimeout closes keep-alive connections idle this long.
	IdleTimeout time.Duration `koanf:"idle_timeout"`
}

// OTLPLimits bound one POST /v1/traces.
type OTLPLimits struct {
	MaxBodyBytes    int64 `koanf:"max_body_bytes"`    // as received (compressed or not)
	MaxDecodedBytes int64 `koanf:"max_decoded_bytes"` // after gunzip
	MaxSpans        int   `koanf:"max_spans"`
	// MaxObjects caps the attributes, events, links and attribute values
	// (and, per span, the resource attributes it inherits) of one request:
	// what the decoded request costs in memory, whatever its byte size.
	MaxObjects int `koanf:"max_objects"`
	// MaxConcurrent requests are decoded at once (default: half the CPUs,
	// at least 1, so decoding never takes every core); others wait up to
	// QueueTimeout, then get 429 with Retry-After.
	MaxConcurrent int           `koanf:"max_concurrent"`
	QueueTimeout  time.Duration `koanf:"queue_timeout"`
	// BytesPerSecond and ByteBurst are one principal's share of OTLP
	// ingest, in decoded (decompressed) body bytes, over all its requests
	// on a replica: a token bucket charged with what each body read (also
	// one then refused); a principal in debt is refused 429 with
	// Retry-After before its next body is read.
	// MaxConcurrent alone lets one exporter keep the decoding slots (and
	// their cores) busy for ever.
	BytesPerSecond int64 `koanf:"bytes_per_second"`
	ByteBurst      int64 `koanf:"byte_burst"`
}

// WSLimits bound the WebSocket endpoint /threads.
type WSLimits struct {
	// ConnectTimeout is how long a socket may stay open without a successful
	// connect (authentication) action.
	ConnectTimeout     time.Duration `koanf:"connect_timeout"`
	MaxSockets         int           `koanf:"max_sockets"`
	MaxUnauthenticated int           `koanf:"max_unauthenticated"`
	// MaxUnauthenticatedPerAddress bounds one client address's share of
	// MaxUnauthenticated, so one client cannot hold every slot.
	MaxUnauthenticatedPerAddress int `koanf:"max_unauthenticated_per_address"`
	MaxPerPrincipal              int `koanf:"max_per_principal"`
	MaxSubscriptions             int `koanf:"max_subscriptions"`
	MaxSubscriptionKeyBytes      int `koanf:"max_subscription_key_bytes"`
	// MaxWaitsPerSocket and MaxWaitsPerPrincipal bound the pending waitFor
	// of one socket and of one principal's sockets on this replica.
	MaxWaitsPerSocket    int `koanf:"max_waits_per_socket"`
	MaxWaitsPerPrincipal int `koanf:"max_waits_per_principal"`
	// FramesPerSecond and FrameBurst bound the frames, BytesPerSecond and
	// ByteBurst their bytes, that one principal's sockets send on this
	// replica (token buckets; acks, heartbeats, subscriptions and
	// cancelWait are free): a frame over either rate is answered
	// rate_limited with retryAfterMs. The defaults are above what one
	// service's SDK sends at the engine's full ingest rate (≈ 5,000 small
	// steps a second); the byte rate is what stops a flood of large frames.
	FramesPerSecond float64 `koanf:"frames_per_second"`
	FrameBurst      int     `koanf:"frame_burst"`
	BytesPerSecond  float64 `koanf:"bytes_per_second"`
	ByteBurst       int     `koanf:"byte_burst"`
	// MaxQueuedBytesPerPrincipal bounds the replies and pushes queued for
	// one principal's sockets and not yet written (a client that does not
	// read): once reached, the engine stops reading that principal's frames
	// until the client reads, and pushes wait for a later delivery.
	MaxQueuedBytesPerPrincipal int64 `koanf:"max_queued_bytes_per_principal"`
	// MaxPendingBytesPerPrincipal bounds the bytes of frames one
	// principal's sockets have sent and the engine holds (unfinished
	// fragmented messages included, counted as they arrive); a socket that
	// cannot get its share within a few seconds is closed (1008).
	MaxPendingBytesPerPrincipal int64 `koanf:"max_pending_bytes_per_principal"`
	// MaxReadingPerPrincipal is how many of one principal's sockets are
	// read and decoded at once (the action then runs without the slot):
	// the others wait unread, so a principal with a hundred flooding
	// sockets gets no more of the engine's CPU for reading than one with
	// a few.
	MaxReadingPerPrincipal int `koanf:"max_reading_per_principal"`
}

// SignInLimits throttle failed credential exchanges (/auth/api-key/exchange,
// /auth/license/exchange).
type SignInLimits struct {
	// FailuresPerWindow failed exchanges per (client address, key prefix)
	// are allowed per Window; further failures are answered 429.
	FailuresPerWindow int           `koanf:"failures_per_window"`
	Window            time.Duration `koanf:"window"`
}

// DefaultLimits are the limits used when nothing is configured.
func DefaultLimits() Limits {
	return Limits{
		HTTP: HTTPLimits{ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second, IdleTimeout: 120 * time.Second},
		OTLP: OTLPLimits{MaxBodyBytes: 4 << 20, MaxDecodedBytes: 8 << 20, MaxSpans: 10000, MaxObjects: 100000,
			MaxConcurrent: max(1, runtime.NumCPU()/2), QueueTimeout: 5 * time.Second, BytesPerSecond: 16 << 20, ByteBurst: 32 << 20},
		WS: WSLimits{ConnectTimeout: 10 * time.Second, MaxSockets: 2000, MaxUnauthenticated: 200, MaxUnauthenticatedPerAddress: 20, MaxPerPrincipal: 100,
			MaxSubscriptions: 256, MaxSubscriptionKeyBytes: 256, MaxWaitsPerSocket: 256, MaxWaitsPerPrincipal: 1024,
			FramesPerSecond: 10000, FrameBurst: 40000, BytesPerSecond: 16 << 20, ByteBurst: 32 << 20, MaxQueuedBytesPerPrincipal: 4 << 20, MaxPendingBytesPerPrincipal: 4 << 20,
			MaxReadingPerPrincipal: 4},
		SignIn: SignInLimits{FailuresPerWindow: 20, Window: time.Minute},
		GraphQL: ReadLimits{MaxDuration: 5 * time.Second, PoolConns: 8, MaxConcurrent: 4, MaxConcurrentPerPrincipal: 2,
			QueueTimeout: 2 * time.Second, PointsPerSecond: 10000, PointsBurst: 50000,
			ExpensiveCost: 100, MaxExpensive: max(1, runtime.NumCPU()/2), ExpensiveShare: 0.25, PrincipalShare: 0.5, MaxResponseBytes: 16 << 20,
			ListContextBytes: 16 << 10, ExportMaxBytes: 256 << 20, ExportThreadMaxBytes: 32 << 20},
	}
}

// limitKeys are the leaf keys of the limits section, from the struct tags.
func limitKeys() map[string]bool {
	out := map[string]bool{}
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			key := prefix + "." + f.Tag.Get("koanf")
			if f.Type.Kind() == reflect.Struct {
				walk(key, f.Type)
				continue
			}
			out[key] = true
		}
	}
	walk("limits", reflect.TypeOf(Limits{}))
	return out
}

func (l *Limits) validate() error {
	durations := map[string]time.Duration{
		"limits.http.read_header_timeout": l.HTTP.ReadHeaderTimeout, "limits.http.read_timeout": l.HTTP.ReadTimeout,
		"limits.http.idle_timeout": l.HTTP.IdleTimeout, "limits.otlp.queue_timeout": l.OTLP.QueueTimeout,
		"limits.ws.connect_timeout": l.WS.ConnectTimeout, "limits.signin.window": l.SignIn.Window,
		"limits.graphql.max_duration": l.GraphQL.MaxDuration, "limits.graphql.queue_timeout": l.GraphQL.QueueTimeout,
	}
	for key, d := range durations {
		if d <= 0 {
			return fmt.Errorf("config: %s must be positive", key)
		}
	}
	counts := map[string]int64{
		"limits.otlp.max_body_bytes": l.OTLP.MaxBodyBytes, "limits.otlp.max_decoded_bytes": l.OTLP.MaxDecodedBytes,
		"limits.otlp.max_spans": int64(l.OTLP.MaxSpans), "limits.otlp.max_objects": int64(l.OTLP.MaxObjects),
		"limits.otlp.max_concurrent": int64(l.OTLP.MaxConcurrent), "limits.ws.max_sockets": int64(l.WS.MaxSockets),
		"limits.otlp.bytes_per_second": l.OTLP.BytesPerSecond, "limits.otlp.byte_burst": l.OTLP.ByteBurst,
		"limits.ws.max_unauthenticated": int64(l.WS.MaxUnauthenticated), "limits.ws.max_per_principal": int64(l.WS.MaxPerPrincipal),
		"limits.ws.max_subscriptions":                 int64(l.WS.MaxSubscriptions),
		"limits.ws.max_subscription_key_bytes":        int64(l.WS.MaxSubscriptionKeyBytes),
		"limits.ws.max_waits_per_socket":              int64(l.WS.MaxWaitsPerSocket),
		"limits.ws.max_waits_per_principal":           int64(l.WS.MaxWaitsPerPrincipal),
		"limits.ws.frame_burst":                       int64(l.WS.FrameBurst),
		"limits.ws.byte_burst":                        int64(l.WS.ByteBurst),
		"limits.ws.max_reading_per_principal":         int64(l.WS.MaxReadingPerPrincipal),
		"limits.ws.max_queued_bytes_per_principal":    l.WS.MaxQueuedBytesPerPrincipal,
		"limits.ws.max_pending_bytes_per_principal":   l.WS.MaxPendingBytesPerPrincipal,
		"limits.signin.failures_per_window":           int64(l.SignIn.FailuresPerWindow),
		"limits.graphql.pool_conns":                   int64(l.GraphQL.PoolConns),
		"limits.graphql.max_concurrent":               int64(l.GraphQL.MaxConcurrent),
		"limits.graphql.max_concurrent_per_principal": int64(l.GraphQL.MaxConcurrentPerPrincipal),
		"limits.graphql.points_per_second":            int64(l.GraphQL.PointsPerSecond),
		"limits.graphql.points_burst":                 int64(l.GraphQL.PointsBurst),
		"limits.graphql.expensive_cost":               int64(l.GraphQL.ExpensiveCost),
		"limits.graphql.max_expensive":                int64(l.GraphQL.MaxExpensive),
		"limits.graphql.max_response_bytes":           int64(l.GraphQL.MaxResponseBytes),
		"limits.graphql.list_context_bytes":           int64(l.GraphQL.ListContextBytes),
		"limits.graphql.export_max_bytes":             l.GraphQL.ExportMaxBytes,
		"limits.graphql.export_thread_max_bytes":      l.GraphQL.ExportThreadMaxBytes,
	}
	for key, n := range counts {
		if n <= 0 {
			return fmt.Errorf("config: %s must be positive", key)
		}
	}
	if l.GraphQL.ExpensiveShare <= 0 || l.GraphQL.ExpensiveShare > 1 {
		return fmt.Errorf("config: limits.graphql.expensive_share must be above 0 and at most 1")
	}
	if l.GraphQL.PrincipalShare <= 0 || l.GraphQL.PrincipalShare > 1 {
		return fmt.Errorf("config: limits.graphql.principal_share must be above 0 and at most 1")
	}
	if l.WS.FramesPerSecond <= 0 || l.WS.BytesPerSecond <= 0 {
		return fmt.Errorf("config: limits.ws.frames_per_second and limits.ws.bytes_per_second must be positive")
	}
	// Each socket being read may hold a whole frame (1 MiB) of the share:
	// a smaller share would make a principal's readers wait on each other.
	if l.WS.MaxPendingBytesPerPrincipal < int64(l.WS.MaxReadingPerPrincipal)<<20 {
		return fmt.Errorf("config: limits.ws.max_pending_bytes_per_principal must be at least limits.ws.max_reading_per_principal × 1 MiB")
	}
	if l.WS.ByteBurst < 1<<20 {
		return fmt.Errorf("config: limits.ws.byte_burst must be at least 1 MiB (the largest frame)")
	}
	if l.GraphQL.PointsBurst < 1000 {
		return fmt.Errorf("config: limits.graphql.points_burst must be at least 1000 (one operation at the cost limit)")
	}
	if l.OTLP.MaxDecodedBytes < l.OTLP.MaxBodyBytes {
		return fmt.Errorf("config: limits.otlp.max_decoded_bytes must be at least limits.otlp.max_body_bytes")
	}
	if l.OTLP.ByteBurst < l.OTLP.MaxDecodedBytes {
		return fmt.Errorf("config: limits.otlp.byte_burst must be at least limits.otlp.max_decoded_bytes (one request at the limit)")
	}
	return nil
}

// ParseTrustedProxies reads CIDRs or single addresses.
func ParseTrustedProxies(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a CIDR nor an IP address", s)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}
