package config

import (
	"strings"
	"testing"
	"time"
)

func TestTelemetryAuditAndGaugeKeys(t *testing.T) {
	t.Parallel()
	c, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr := c.Telemetry.Tracing; tr.Endpoint != "" || tr.SampleRatio != 1 || tr.ServiceName != "threadengine" ||
		c.Audit.RetentionDays != 0 || c.Metrics.GaugeInterval != time.Minute {
		t.Fatalf("defaults %+v %+v %+v", tr, c.Audit, c.Metrics)
	}
	c, err = Load("", []string{
		"THREADENGINE_TELEMETRY__TRACING__ENDPOINT=http://collector:4318",
		"THREADENGINE_TELEMETRY__TRACING__HEADERS__AUTHORIZATION=Bearer x",
		"THREADENGINE_TELEMETRY__TRACING__SAMPLE_RATIO=0.25",
		"THREADENGINE_AUDIT__RETENTION_DAYS=400",
		"THREADENGINE_METRICS__GAUGE_INTERVAL=30s",
	})
	if err != nil {
		t.Fatal(err)
	}
	if tr := c.Telemetry.Tracing; tr.Endpoint != "http://collector:4318" || tr.Headers["authorization"] != "Bearer x" ||
		tr.SampleRatio != 0.25 || c.Audit.RetentionDays != 400 || c.Metrics.GaugeInterval != 30*time.Second {
		t.Fatalf("from the environment %+v %+v %+v", tr, c.Audit, c.Metrics)
	}
	for env, key := range map[string]string{
		"THREADENGINE_TELEMETRY__TRACING__ENDPOINT=collector:4318": "telemetry.tracing.endpoint",
		"THREADENGINE_TELEMETRY__TRACING__SAMPLE_RATIO=2":          "telemetry.tracing.sample_ratio",
		"THREADENGINE_TELEMETRY__TRACING__ENDPONT=http://x":        "telemetry.tracing.endpont",
		"THREADENGINE_AUDIT__RETENTION_DAYS=-1":                    "audit.retention_days",
		"THREADENGINE_METRICS__GAUGE_INTERVAL=10ms":                "metrics.gauge_interval",
	} {
		if _, err := Load("", []string{env}); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v, want an error naming %s", env, err, key)
		}
	}
}
