package ops_test

import (
	"context"
	"testing"
	"time"

	"github.com/threadengine/engine/app/ops"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
	"github.com/threadengine/engine/ports/portstest"
)

// Lines older than audit.retention_days go, in batches; newer ones stay;
// the sweep says in the log itself how many it deleted; 0 keeps everything.
func TestAuditRetention(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	ids := portstest.NewIdentity()
	for i := range 7 {
		// Lines 0-4 are 40+ days old, 5 and 6 are recent.
		at := now.Add(-time.Duration(40+i) * 24 * time.Hour)
		if i >= 5 {
			at = now.Add(-time.Duration(i) * time.Hour)
		}
		if err := ids.RecordAudit(context.Background(), ports.AuditEntry{ID: string(rune('a' + i)), At: at,
			ActorKind: domain.PrincipalUser, ActorID: "u", Action: "x", Target: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	deps := ops.AuditRetentionDeps{Store: ids, Audit: ids, Clock: portstest.NewClock(now), NewID: func() string { return "sweep" },
		BatchSize: 2}
	if n, err := ops.NewAuditRetention(deps).Sweep(context.Background()); err != nil || n != 0 {
		t.Fatalf("days 0: %d %v", n, err)
	}
	deps.Days = 30
	n, err := ops.NewAuditRetention(deps).Sweep(context.Background())
	if err != nil || n != 5 {
		t.Fatalf("sweep %d %v", n, err)
	}
	log := ids.AuditLog()
	if len(log) != 3 || log[2].Action != "audit.retention_delete" || log[2].Details["entries"] != 5 || log[2].ActorID != "retention" {
		t.Fatalf("left %+v", log)
	}
	for _, e := range log[:2] {
		if e.ID != "f" && e.ID != "g" {
			t.Fatalf("kept %+v", e)
		}
	}
}
