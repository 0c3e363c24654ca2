package webhookstore_test

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/adapters/webhookstore"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/ops"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func hook(id string, enabled bool, min domain.Severity, evs ...domain.WebhookEvent) ports.Webhook {
	return ports.Webhook{ID: id, Name: id, URL: "http://127.0.0.1:1/" + id, Secret: "whsec_c2VjcmV0", Format: domain.FormatStandard,
		Events: evs, MinSeverity: min, Enabled: enabled, CreatedAt: t0, UpdatedAt: t0}
}

func deliveredTo(t *testing.T, ws *webhookstore.Store, ctx context.Context, ids ...string) map[string][]ports.WebhookDelivery {
	t.Helper()
	out := map[string][]ports.WebhookDelivery{}
	for _, id := range ids {
		ds, err := ws.ListDeliveries(ctx, id, 100)
		if err != nil {
			t.Fatal(err)
		}
		out[id] = ds
	}
	return out
}

// Alert notifications fan out to the outbox in their own transaction: to
// enabled webhooks subscribed to the event whose minimum severity the issue
// reaches, once each; the thread alert is recorded once, whichever of many
// concurrent callers gets there first.
func TestAlertsFanOutToTheOutbox(t *testing.T) {
	sqldbtest.ForEachDB(t, func(t *testing.T, db *sqldb.DB) {
		ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleMember})
		ts := threadstore.New(db)
		ws := webhookstore.New(db)
		for _, w := range []ports.Webhook{
			hook("failed", true, domain.SeverityMajor, domain.EventStepFailed),
			hook("off", false, domain.SeverityMajor, domain.EventStepFailed),
			hook("minor", true, domain.SeverityWarning, domain.EventValidationViolated),
			hook("critical", true, domain.SeverityCritical, domain.EventValidationViolated, domain.EventThreadSilent),
		} {
			if err := ws.CreateWebhook(ctx, w); err != nil {
				t.Fatal(err)
			}
		}
		threads := threadsapp.New(ts, nil, nil, []byte("secret"), nil)
		th, err := threads.Application().Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: "x"})
		if err != nil {
			t.Fatal(err)
		}
		for i, st := range []string{"success", "failed"} {
			if _, err := threads.Application().Commands.RecordStep.Handle(ctx, threadsapp.RecordStepInput{ThreadID: th.ID, StepName: "pay", Status: st,
				IdempotencyKey: []string{"a", "b"}[i], Context: map[string]string{}}); err != nil {
				t.Fatal(err)
			}
		}
		got := deliveredTo(t, ws, ctx, "failed", "off", "minor", "critical")
		if len(got["failed"]) != 1 || len(got["off"]) != 0 || len(got["minor"]) != 0 || len(got["critical"]) != 0 {
			t.Fatalf("after a failed step: %v", got)
		}
		d := got["failed"][0]
		var p domain.WebhookPayload
		if err := json.Unmarshal(d.Payload, &p); err != nil || p.Type != domain.EventStepFailed || p.Data.ThreadID != th.ID ||
			p.Data.StepName != "pay" || d.State != ports.DeliveryPending || d.ThreadID != th.ID || d.NotificationID == "" {
			t.Fatalf("delivery %+v payload %s %v", d, d.Payload, err)
		}

		// A minor violation reaches the webhook whose minimum is warning,
		// not the one whose minimum is critical.
		minor := func(tt *domain.Thread) (ports.ThreadAlert, bool) {
			n := ports.NotificationRecord{ID: "n-minor", ThreadID: tt.ID, StepName: "global", Source: "validation",
				NotificationType: "validation.violated", ViolationType: "missing_optional_field", Severity: "minor",
				Message: "minor issue", CreatedAt: t0}
			return ports.ThreadAlert{Validation: ports.ValidationRecord{ID: "v-minor", StepName: "global",
				OverallStatus: domain.ValidationWarning, CreatedAt: t0}, Notifications: []ports.NotificationRecord{n}}, true
		}
		if ok, err := ts.RecordThreadAlert(ctx, th.ID, "test-minor", minor); !ok || err != nil {
			t.Fatal(ok, err)
		}
		got = deliveredTo(t, ws, ctx, "minor", "critical")
		if len(got["minor"]) != 1 || len(got["critical"]) != 0 {
			t.Fatalf("after a minor violation: %v", got)
		}

		// Silent: 8 concurrent recorders, one alert.
		silent := ops.NewAlertSweep(ops.AlertSweepDeps{Store: ts, Clock: fixedClock(time.Now().Add(time.Hour)), SilentAfter: time.Minute})
		if total := sweepConcurrently(t, ctx, silent, 8); total != 1 {
			t.Fatalf("%d silent alerts recorded by concurrent sweeps; want 1", total)
		}
		if r, err := silent.Sweep(ctx); err != nil || r.Silent != 0 {
			t.Fatalf("second sweep %+v %v", r, err)
		}
		got = deliveredTo(t, ws, ctx, "critical", "minor")
		if len(got["critical"]) != 1 || got["critical"][0].EventType != domain.EventThreadSilent || len(got["minor"]) != 1 {
			t.Fatalf("after the silent sweep: %v", got)
		}
		var nv int
		if err := db.QueryRow(db.Rebind(`SELECT COUNT(*) FROM thread_validations WHERE thread_id = ? AND step_name = 'global'`), th.ID).Scan(&nv); err != nil || nv != 2 {
			t.Fatalf("thread-level validations %d %v; want 2 (minor + silent)", nv, err)
		}
		back, err := ts.GetThread(ctx, th.ID)
		if err != nil || back.Status != domain.ThreadActive || back.Health().Warnings != 1 { // the silent alert folded; the hand-made minor one did not
			t.Fatalf("thread after alerts %+v %v", back, err)
		}

		// A step wakes the thread; when it falls silent again, that
		// silence is flagged once more (once, by concurrent sweeps too).
		if _, err := threads.Application().Commands.RecordStep.Handle(ctx, threadsapp.RecordStepInput{ThreadID: th.ID, StepName: "pay",
			Status: "success", IdempotencyKey: "c", Context: map[string]string{}}); err != nil {
			t.Fatal(err)
		}
		if r, err := silent.Sweep(ctx); err != nil || r.Silent != 0 {
			t.Fatalf("sweep right after a step, with the clock before it: %+v %v", r, err)
		}
		again := ops.NewAlertSweep(ops.AlertSweepDeps{Store: ts, Clock: fixedClock(time.Now().Add(3 * time.Hour)), SilentAfter: time.Minute})
		total := sweepConcurrently(t, ctx, again, 4)
		if r, err := again.Sweep(ctx); err != nil || total != 1 || r.Silent != 0 {
			t.Fatalf("second silence: %d alerts by concurrent sweeps, then %+v %v; want 1, then 0", total, r, err)
		}
		if got = deliveredTo(t, ws, ctx, "critical"); len(got["critical"]) != 2 {
			t.Fatalf("after the second silence: %v", got)
		}

		// Erasing the thread erases its alerts and deliveries.
		if _, err := ts.DeleteThreads(ctx, []string{th.ID}); err != nil {
			t.Fatal(err)
		}
		got = deliveredTo(t, ws, ctx, "failed", "minor", "critical")
		if len(got["failed"])+len(got["minor"])+len(got["critical"]) != 0 {
			t.Fatalf("deliveries of an erased thread: %v", got)
		}
	})
}

// sweepConcurrently runs n sweeps at once, as n replicas would, and
// returns how many silent alerts they recorded together.
func sweepConcurrently(t *testing.T, ctx context.Context, sweep *ops.AlertSweep, n int) int {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := sweep.Sweep(ctx)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += r.Silent
			mu.Unlock()
		}()
	}
	wg.Wait()
	return total
}

type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

// Claims lease disjoint rows to concurrent claimers; a settle needs the
// lease; an ended lease lets another claimer take the row again.
func TestClaimSettleAndLog(t *testing.T) {
	sqldbtest.ForEachDB(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		ws := webhookstore.New(db)
		if err := ws.CreateWebhook(ctx, hook("h", true, domain.SeverityMajor, domain.EventStepFailed)); err != nil {
			t.Fatal(err)
		}
		if err := ws.CreateWebhook(ctx, hook("disabled", false, domain.SeverityMajor)); err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			d := ports.WebhookDelivery{ID: "msg_" + string(rune('a'+i)), WebhookID: "h", EventType: domain.EventWebhookTest,
				Payload: []byte(`{}`), NextAttemptAt: t0, CreatedAt: t0.Add(time.Duration(i) * time.Second)}
			if err := ws.EnqueueDelivery(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		if err := ws.EnqueueDelivery(ctx, ports.WebhookDelivery{ID: "msg_off", WebhookID: "disabled", EventType: domain.EventWebhookTest,
			Payload: []byte(`{}`), NextAttemptAt: t0, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		if n, err := ws.CountPendingDeliveries(ctx); err != nil || n != 21 {
			t.Fatalf("pending %d %v", n, err)
		}
		now := t0.Add(time.Second)
		var mu sync.Mutex
		seen := map[string]string{}
		var wg sync.WaitGroup
		for c := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				token := "tok" + string(rune('0'+c))
				jobs, err := ws.ClaimDeliveries(ctx, now, now.Add(time.Minute), token, 8)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for _, j := range jobs {
					if prev, dup := seen[j.Delivery.ID]; dup {
						t.Errorf("%s leased to %s and %s", j.Delivery.ID, prev, token)
					}
					seen[j.Delivery.ID] = token
					if j.Delivery.Attempts != 1 || j.URL != "http://127.0.0.1:1/h" || j.LeaseToken != token {
						t.Errorf("job %+v", j)
					}
				}
			}()
		}
		wg.Wait()
		if len(seen) != 20 {
			t.Fatalf("%d deliveries leased; want the 20 of the enabled webhook", len(seen))
		}
		if jobs, err := ws.ClaimDeliveries(ctx, now, now.Add(time.Minute), "late", 100); err != nil || len(jobs) != 0 {
			t.Fatalf("claimed leased rows: %d %v", len(jobs), err)
		}
		ids := make([]string, 0, len(seen))
		for id := range seen {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		// Wrong token: refused. Right token: delivered.
		if ok, err := ws.SettleDelivery(ctx, ports.DeliveryOutcome{ID: ids[0], LeaseToken: "nope", State: ports.DeliveryDelivered, At: now}); ok || err != nil {
			t.Fatalf("settled with a foreign token: %v %v", ok, err)
		}
		if ok, err := ws.SettleDelivery(ctx, ports.DeliveryOutcome{ID: ids[0], LeaseToken: seen[ids[0]], State: ports.DeliveryDelivered,
			At: now, Status: 204, Latency: 12 * time.Millisecond}); !ok || err != nil {
			t.Fatalf("settle %v %v", ok, err)
		}
		// Retry later: not due before NextAttemptAt.
		if ok, err := ws.SettleDelivery(ctx, ports.DeliveryOutcome{ID: ids[1], LeaseToken: seen[ids[1]], State: ports.DeliveryPending,
			NextAttemptAt: now.Add(10 * time.Minute), At: now, Status: 500, Error: "HTTP 500"}); !ok || err != nil {
			t.Fatalf("reschedule %v %v", ok, err)
		}
		// After the leases end the unsettled rows are claimable again,
		// except the one rescheduled for later.
		later := now.Add(2 * time.Minute)
		jobs, err := ws.ClaimDeliveries(ctx, later, later.Add(time.Minute), "again", 100)
		if err != nil || len(jobs) != 18 {
			t.Fatalf("reclaimed %d %v; want 18", len(jobs), err)
		}
		for _, j := range jobs {
			if j.Delivery.Attempts != 2 || j.Delivery.ID == ids[0] || j.Delivery.ID == ids[1] {
				t.Fatalf("reclaimed %+v", j.Delivery)
			}
		}
		jobs, err = ws.ClaimDeliveries(ctx, now.Add(11*time.Minute), now.Add(12*time.Minute), "retry", 100)
		if err != nil || len(jobs) != 19 {
			t.Fatalf("claimed %d at the retry time %v; want 19", len(jobs), err)
		}
		log, err := ws.ListDeliveries(ctx, "h", 5)
		if err != nil || len(log) != 5 || log[0].CreatedAt.Before(log[4].CreatedAt) {
			t.Fatalf("log %v %v", log, err)
		}
		var first ports.WebhookDelivery
		all, _ := ws.ListDeliveries(ctx, "h", 100)
		for _, d := range all {
			if d.ID == ids[0] {
				first = d
			}
		}
		if first.State != ports.DeliveryDelivered || first.LastStatus != 204 || first.LastLatency != 12*time.Millisecond ||
			first.SettledAt == nil || first.Attempts != 1 {
			t.Fatalf("settled delivery %+v", first)
		}
		if n, err := ws.PruneDeliveries(ctx, now.Add(time.Second), 100); err != nil || n != 1 {
			t.Fatalf("pruned %d %v; want the one settled", n, err)
		}
		if err := ws.DeleteWebhook(ctx, "h"); err != nil {
			t.Fatal(err)
		}
		if n, err := ws.CountPendingDeliveries(ctx); err != nil || n != 1 {
			t.Fatalf("pending after delete %d %v", n, err)
		}
		if _, err := ws.GetWebhook(ctx, "h"); domain.KindOf(err) != domain.KindNotFound {
			t.Fatalf("deleted webhook: %v", err)
		}
	})
}

func TestWebhookCRUD(t *testing.T) {
	sqldbtest.ForEachDB(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		ws := webhookstore.New(db)
		w := hook("a", true, domain.SeverityMinor, domain.EventThreadFailed, domain.EventStepFailed)
		w.Format = domain.FormatSlack
		if err := ws.CreateWebhook(ctx, w); err != nil {
			t.Fatal(err)
		}
		got, err := ws.GetWebhook(ctx, "a")
		if err != nil || got.Format != domain.FormatSlack || got.MinSeverity != domain.SeverityMinor || len(got.Events) != 2 ||
			got.Events[0] != domain.EventStepFailed || !got.Enabled || !got.CreatedAt.Equal(t0) {
			t.Fatalf("got %+v %v", got, err)
		}
		up, err := ws.UpdateWebhook(ctx, "a", func(w *ports.Webhook) error { w.Enabled = false; w.Name = "renamed"; return nil })
		if err != nil || up.Enabled || up.Name != "renamed" {
			t.Fatalf("update %+v %v", up, err)
		}
		if _, err := ws.UpdateWebhook(ctx, "a", func(*ports.Webhook) error { return domain.Invalid("x", "no") }); domain.CodeOf(err) != domain.CodeValidationFailed {
			t.Fatalf("refused update: %v", err)
		}
		list, err := ws.ListWebhooks(ctx)
		if err != nil || len(list) != 1 || list[0].Name != "renamed" || list[0].Enabled {
			t.Fatalf("list %+v %v", list, err)
		}
		if _, err := ws.UpdateWebhook(ctx, "zz", func(*ports.Webhook) error { return nil }); domain.KindOf(err) != domain.KindNotFound {
			t.Fatalf("update unknown: %v", err)
		}
		if err := ws.DeleteWebhook(ctx, "zz"); domain.KindOf(err) != domain.KindNotFound {
			t.Fatalf("delete unknown: %v", err)
		}
	})
}

// The claim's plain pre-check (which spares an idle deliverer a write
// transaction every poll) sees a row as due only when the claim would take
// it: not for a disabled webhook, not while leased.
func TestDueMatchesWhatTheClaimTakes(t *testing.T) {
	sqldbtest.ForEachDB(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		ws := webhookstore.New(db)
		now := t0.Add(time.Hour)
		due := func() bool {
			ok, err := webhookstore.AnyDue(ws, ctx, now)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if err := ws.CreateWebhook(ctx, hook("off", false, domain.SeverityMajor)); err != nil {
			t.Fatal(err)
		}
		if err := ws.EnqueueDelivery(ctx, ports.WebhookDelivery{ID: "msg_off", WebhookID: "off", EventType: domain.EventWebhookTest,
			Payload: []byte(`{}`), NextAttemptAt: t0, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		if due() {
			t.Fatal("a disabled webhook's pending row counts as due")
		}
		if err := ws.CreateWebhook(ctx, hook("on", true, domain.SeverityMajor)); err != nil {
			t.Fatal(err)
		}
		if err := ws.EnqueueDelivery(ctx, ports.WebhookDelivery{ID: "msg_on", WebhookID: "on", EventType: domain.EventWebhookTest,
			Payload: []byte(`{}`), NextAttemptAt: t0, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		if !due() {
			t.Fatal("an enabled webhook's pending row is not due")
		}
		if jobs, err := ws.ClaimDeliveries(ctx, now, now.Add(time.Minute), "tok", 8); err != nil || len(jobs) != 1 {
			t.Fatalf("claim: %v %v", jobs, err)
		}
		if due() {
			t.Fatal("a leased row counts as due")
		}
	})
}

// An attempt the engine interrupted (shutdown) is given back uncounted and
// unleased: the next claimer takes it at once.
func TestInterruptedAttemptIsGivenBack(t *testing.T) {
	sqldbtest.ForEachDB(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		ws := webhookstore.New(db)
		if err := ws.CreateWebhook(ctx, hook("h", true, domain.SeverityMajor)); err != nil {
			t.Fatal(err)
		}
		if err := ws.EnqueueDelivery(ctx, ports.WebhookDelivery{ID: "msg_1", WebhookID: "h", EventType: domain.EventWebhookTest,
			Payload: []byte(`{}`), NextAttemptAt: t0, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		now := t0.Add(time.Second)
		jobs, err := ws.ClaimDeliveries(ctx, now, now.Add(time.Hour), "tok1", 8)
		if err != nil || len(jobs) != 1 || jobs[0].Delivery.Attempts != 1 {
			t.Fatalf("claim %+v %v", jobs, err)
		}
		if ok, err := ws.SettleDelivery(ctx, ports.DeliveryOutcome{ID: "msg_1", LeaseToken: "tok1", Interrupted: true, At: now}); !ok || err != nil {
			t.Fatalf("give back: %v %v", ok, err)
		}
		jobs, err = ws.ClaimDeliveries(ctx, now, now.Add(time.Hour), "tok2", 8)
		if err != nil || len(jobs) != 1 || jobs[0].Delivery.Attempts != 1 || jobs[0].Delivery.State != ports.DeliveryPending {
			t.Fatalf("claimed again %+v %v; want the same delivery at attempt 1", jobs, err)
		}
	})
}
