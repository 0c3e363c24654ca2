package config

import (
	"fmt"
	"strings"
	"time"
)

// Telemetry configures what the engine reports about itself beyond
// /metrics: its own traces.
type Telemetry struct {
	Tracing Tracing `koanf:"tracing"`
}

// Tracing exports the engine's own spans by OTLP/HTTP (docs/operators/tracing.md).
type Tracing struct {
	// Endpoint is the collector's OTLP/HTTP base URL (http://collector:4318)
	// or its full traces URL (…/v1/traces); empty turns exporting off.
	Endpoint string `koanf:"endpoint"`
	// Headers are sent with every export (an authorization header for a
	// hosted backend), one key per header.
	Headers map[string]string `koanf:"headers"`
	// SampleRatio is the share of traces started here that are recorded
	// (0 to 1); a trace the caller's traceparent marks sampled, or not, is
	// followed as it says.
	SampleRatio float64 `koanf:"sample_ratio"`
	// ServiceName is the service.name resource attribute.
	ServiceName string `koanf:"service_name"`
}

// Audit configures the audit log.
type Audit struct {
	// RetentionDays deletes audit entries older than this many days, in the
	// background (0 keeps them forever).
	RetentionDays int `koanf:"retention_days"`
}

// MaxAuditRetentionDays bounds audit.retention_days (a hundred years).
const MaxAuditRetentionDays = 36500

func defaultTelemetry() Telemetry {
	return Telemetry{Tracing: Tracing{SampleRatio: 1, ServiceName: "threadengine"}}
}

// telemetryKeys are the keys of the telemetry and audit sections (and
// metrics.gauge_interval); telemetry.tracing.headers.* is a map.
var telemetryKeys = map[string]bool{
	"telemetry.tracing.endpoint": true, "telemetry.tracing.sample_ratio": true, "telemetry.tracing.service_name": true,
	"audit.retention_days": true, "metrics.gauge_interval": true,
}

func telemetryKey(key string) bool {
	return telemetryKeys[key] || strings.HasPrefix(key, "telemetry.tracing.headers.")
}

func (t *Telemetry) validate() error {
	tr := &t.Tracing
	if tr.Endpoint != "" {
		if _, err := checkHTTPURL(tr.Endpoint, true); err != nil {
			return fmt.Errorf("config: telemetry.tracing.endpoint: %w", err)
		}
	}
	if tr.SampleRatio < 0 || tr.SampleRatio > 1 {
		return fmt.Errorf("config: telemetry.tracing.sample_ratio must be between 0 and 1")
	}
	if strings.TrimSpace(tr.ServiceName) == "" {
		tr.ServiceName = "threadengine"
	}
	return nil
}

func (a Audit) validate() error {
	if a.RetentionDays < 0 || a.RetentionDays > MaxAuditRetentionDays {
		return fmt.Errorf("config: audit.retention_days must be between 0 (keep forever) and %d", MaxAuditRetentionDays)
	}
	return nil
}

func (m *Metrics) validate() error {
	if m.GaugeInterval == 0 {
		m.GaugeInterval = time.Minute
	}
	if m.GaugeInterval < time.Second {
		return fmt.Errorf("config: metrics.gauge_interval must be at least 1s")
	}
	return nil
}
