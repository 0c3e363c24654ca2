package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/opshttp"
	"github.com/threadengine/engine/test/enginetest"
)

// pollUntil checks cond every few milliseconds until it holds. Its bound
// only turns a hang into a failure naming what never happened; it is no
// speed requirement (a busy machine may take long), so it is generous.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	pollUntilf(t, func() string { return "never: " + what }, cond)
}

// pollUntilf is pollUntil failing with failure()'s text, which may report
// the last state cond saw.
func pollUntilf(t *testing.T, failure func() string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	give := time.NewTimer(time.Minute)
	defer give.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-give.C:
			t.Fatal(failure())
		}
	}
}

// settledDeliveries waits until the webhook's deliveries (at most 100) are
// all settled and returns them. Deliveries are queued in the transaction
// that records their event, so once every one is settled nothing more will
// be sent for the events recorded so far: the way to show that something
// was not sent, without sleeping "long enough".
func settledDeliveries(t *testing.T, e *enginetest.Engine, webhookID string) []opshttp.DeliveryJSON {
	t.Helper()
	var ds []opshttp.DeliveryJSON
	pollUntil(t, "webhook "+webhookID+"'s deliveries settled", func() bool {
		resp, raw := e.Do(t, http.MethodGet, "/v1/webhooks/"+webhookID+"/deliveries?limit=100", e.AdminKey, nil)
		wantStatus(t, resp, raw, http.StatusOK)
		ds = decode[opshttp.DeliveryListJSON](t, raw).Deliveries
		for _, d := range ds {
			if d.State == "pending" {
				return false
			}
		}
		return true
	})
	return ds
}
