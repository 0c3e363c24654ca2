package ports_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// A step.failed payload leaves severity out (docs/operators/alerts.md): the
// SDK notification's "warning" is not a contract issue's severity. Events
// that come from an issue keep its severity.
func TestAlertPayloadSeverity(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		n        ports.NotificationRecord
		event    domain.WebhookEvent
		severity string // "" when the payload must not have the key
	}{
		{ports.NotificationRecord{NotificationType: "execution.failed", Severity: "warning", StepName: "pay", StepStatus: "failed"}, domain.EventStepFailed, ""},
		{ports.NotificationRecord{NotificationType: "validation.violated", Severity: "critical", ViolationType: "invalid_transition", StepName: "ship"}, domain.EventValidationViolated, "critical"},
		{ports.NotificationRecord{NotificationType: "thread.failed", Severity: "critical", ViolationType: "invalid_transition"}, domain.EventThreadFailed, "critical"},
		{ports.NotificationRecord{NotificationType: "validation.violated", Severity: "major", ViolationType: domain.IssueMaxDurationExceeded, StepName: "global"}, domain.EventThreadOverdue, "major"},
	}
	for _, c := range cases {
		c.n.ID, c.n.ThreadID, c.n.CreatedAt = "n1", "t1", at
		row, ok := ports.AlertOf(c.n)
		if !ok || row.Event != c.event {
			t.Fatalf("%s: alert %v %v, want %s", c.n.NotificationType, row.Event, ok, c.event)
		}
		var p struct {
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal(row.Payload, &p); err != nil {
			t.Fatal(err)
		}
		got, has := p.Data["severity"]
		if c.severity == "" && has {
			t.Errorf("%s payload carries severity %v: %s", c.event, got, row.Payload)
		}
		if c.severity != "" && got != c.severity {
			t.Errorf("%s payload severity %v, want %s: %s", c.event, got, c.severity, row.Payload)
		}
	}
}
