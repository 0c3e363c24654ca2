package e2e

import (
	"fmt"
	"testing"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/test/enginetest"
)

// Two replicas on one PostgreSQL both run the deliverer: every alert is
// sent once (leases keep them from sending the same row concurrently),
// whichever replica recorded it.
func TestReplicasDeliverWebhooksOnce(t *testing.T) {
	t.Parallel()
	fast := enginetest.WithConfig(func(c *config.Config) {
		alertsFast(c)
		c.Security.HashChainSecret = ""
		c.Alerts.Concurrency = 2
	})
	a := enginetest.Start(t, sqldb.Postgres, fast)
	b := enginetest.Start(t, sqldb.Postgres, fast, enginetest.WithDatabase(a.Config.Database.URL), enginetest.WithoutOwner(),
		enginetest.WithClockAt(a.Clock.Now()))
	rcv := newReceiver(t)
	w := createWebhook(t, a, map[string]any{"name": "ops", "url": rcv.URL, "events": []string{"step.failed"}})
	ca, cb := connectWS(t, a, a.AdminKey), connectWS(t, b, a.AdminKey)
	const n = 40
	for i := range n {
		c := ca
		if i%2 == 1 {
			c = cb
		}
		th := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		c.ok(step(th, "charge", "failed", fmt.Sprint("k", i), nil))
	}
	rcv.waitFor(t, n)
	// Once every delivery is settled nothing more is sent; a duplicate
	// would have needed a second lease, which counts an attempt.
	ds := settledDeliveries(t, a, w.ID)
	for _, d := range ds {
		if d.State != "delivered" || d.Attempts != 1 {
			t.Fatalf("delivery %+v: want delivered at the first attempt", d)
		}
	}
	got := rcv.requests()
	seen := map[string]int{}
	for _, g := range got {
		verify(t, w.Secret, g)
		seen[g.ID]++
	}
	if len(got) != n || len(seen) != n || len(ds) != n {
		t.Fatalf("%d requests for %d distinct deliveries; want %d each once", len(got), len(seen), n)
	}
}
