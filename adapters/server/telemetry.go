package server

import (
	"context"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/graphqlapi"
	"github.com/threadengine/engine/adapters/mcpapi"
	"github.com/threadengine/engine/adapters/prommetrics"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/adapters/tracing"
	"github.com/threadengine/engine/adapters/wsapi"
)

// newTracing builds the engine's tracer provider from telemetry.tracing
// (a no-op one without an endpoint).
func newTracing(ctx context.Context, c config.Tracing) (*tracing.Provider, error) {
	host, _ := os.Hostname()
	version := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = bi.Main.Version
	}
	return tracing.New(ctx, tracing.Options{Endpoint: c.Endpoint, Headers: c.Headers, SampleRatio: c.SampleRatio,
		ServiceName: c.ServiceName, ServiceVersion: version, InstanceID: host + ":" + strconv.Itoa(os.Getpid())})
}

// metricLabels are the label values every engine series is created with at
// start (every WebSocket action, the SDKs' GraphQL operations, every MCP tool).
func metricLabels() prommetrics.Labels {
	return prommetrics.Labels{WSActions: wsapi.ActionNames(), GraphQLOperations: graphqlapi.KnownOperations,
		MCPTools: mcpapi.ToolNames()}
}

// startThreadGauges refreshes the active-thread gauges every
// metrics.gauge_interval until Close.
func (s *Server) startThreadGauges(tq *threadquery.Store) {
	m, ok := s.EngineMetrics.(*prommetrics.Metrics)
	if !ok {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.RunThreadGauges(ctx, tq, s.Config.Metrics.GaugeInterval, s.Log) }()
	s.OnClose(func() error { stop(); <-done; return nil })
}

// closeTracing exports the spans still buffered, within a few seconds.
func (s *Server) closeTracing() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.Tracing.Shutdown(ctx)
}
