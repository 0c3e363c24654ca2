package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/opshttp"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// receiver is a real HTTP server on loopback that records the webhook
// requests it gets; fail answers 503 while > 0 (counting down).
type receiver struct {
	URL string
	mu  sync.Mutex
	got []received
	// fail requests are answered 503 first; down answers every one 503.
	fail int
	down bool
	srv  *http.Server
}

type received struct {
	ID, Timestamp, Signature string
	Body                     []byte
	Status                   int
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{URL: "http://" + l.Addr().String() + "/hook"}
	r.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		status := http.StatusOK
		if r.down || r.fail > 0 {
			status = http.StatusServiceUnavailable
			if r.fail > 0 {
				r.fail--
			}
		}
		r.got = append(r.got, received{ID: req.Header.Get("webhook-id"), Timestamp: req.Header.Get("webhook-timestamp"),
			Signature: req.Header.Get("webhook-signature"), Body: body, Status: status})
		r.mu.Unlock()
		w.WriteHeader(status)
		_, _ = w.Write([]byte("receiver says " + strconv.Itoa(status)))
	})}
	go func() { _ = r.srv.Serve(l) }()
	t.Cleanup(func() { _ = r.srv.Close() })
	return r
}

func (r *receiver) set(fail int, down bool) {
	r.mu.Lock()
	r.fail, r.down = fail, down
	r.mu.Unlock()
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// waitFor polls until n requests with status 200 arrived.
func (r *receiver) waitFor(t *testing.T, ok int) []received {
	t.Helper()
	var got []received
	pollUntil(t, fmt.Sprintf("receiver got %d delivered", ok), func() bool {
		got = r.requests()
		n := 0
		for _, g := range got {
			if g.Status == http.StatusOK {
				n++
			}
		}
		return n >= ok
	})
	return got
}

// verify checks a request's Standard Webhooks signature with secret.
func verify(t *testing.T, secret string, g received) domain.WebhookPayload {
	t.Helper()
	sec, err := strconv.ParseInt(g.Timestamp, 10, 64)
	if err != nil || g.ID == "" {
		t.Fatalf("headers %+v", g)
	}
	ts := time.Unix(sec, 0)
	if !domain.VerifyWebhook(secret, g.ID, ts, ts, g.Body, g.Signature, time.Minute) {
		t.Fatalf("signature %q does not verify for %s", g.Signature, g.Body)
	}
	if domain.VerifyWebhook(secret, g.ID, ts, ts, append(append([]byte(nil), g.Body...), ' '), g.Signature, time.Minute) {
		t.Fatal("a changed body verified")
	}
	var p domain.WebhookPayload
	if err := json.Unmarshal(g.Body, &p); err != nil {
		t.Fatalf("payload %s: %v", g.Body, err)
	}
	return p
}

func alertsFast(c *config.Config) {
	c.Alerts.PollInterval = 20 * time.Millisecond
	c.Alerts.RetryBase = 30 * time.Second
	c.Alerts.Timeout = 5 * time.Second
	// The receivers run on loopback: their answers are logged in detail
	// (a private destination is otherwise one coded outcome).
	c.Alerts.PrivateAnswerDetails = true
}

func createWebhook(t *testing.T, e *enginetest.Engine, body map[string]any) opshttp.WebhookJSON {
	t.Helper()
	resp, raw := e.Do(t, http.MethodPost, "/v1/webhooks", e.AdminKey, body)
	wantStatus(t, resp, raw, http.StatusCreated)
	w := decode[opshttp.WebhookJSON](t, raw)
	if len(w.Secret) < 20 || w.Secret[:6] != "whsec_" {
		t.Fatalf("secret %q", w.Secret)
	}
	return w
}

func deliveries(t *testing.T, e *enginetest.Engine, id string) []opshttp.DeliveryJSON {
	t.Helper()
	resp, raw := e.Do(t, http.MethodGet, "/v1/webhooks/"+id+"/deliveries?limit=10", e.AdminKey, nil)
	wantStatus(t, resp, raw, http.StatusOK)
	return decode[opshttp.DeliveryListJSON](t, raw).Deliveries
}

// Admins manage webhooks; a failed step is delivered signed to a real
// receiver, retried after the receiver fails (same webhook-id), and the
// delivery log shows both attempts; send test and slack format work.
func TestWebhooksDeliverSignedAndRetry(t *testing.T) {
	t.Parallel()
	forEachDialectD(t, func(t *testing.T, d sqldb.Dialect) {
		e := enginetest.Start(t, d, enginetest.WithConfig(alertsFast))
		_, memberKey := e.NewUser(t, domain.RoleMember)
		rcv := newReceiver(t)

		// Permissions and URL rules.
		resp, raw := e.Do(t, http.MethodGet, "/v1/webhooks", memberKey, nil)
		wantProblem(t, resp, raw, http.StatusForbidden, "forbidden")
		resp, raw = e.Do(t, http.MethodPost, "/v1/webhooks", memberKey, map[string]any{"name": "x", "url": rcv.URL})
		wantProblem(t, resp, raw, http.StatusForbidden, "forbidden")
		resp, raw = e.Do(t, http.MethodPost, "/v1/webhooks", e.AdminKey, map[string]any{"name": "x", "url": "file:///etc/passwd"})
		wantProblem(t, resp, raw, http.StatusBadRequest, "webhook_url_invalid")
		resp, raw = e.Do(t, http.MethodPost, "/v1/webhooks", e.AdminKey, map[string]any{"name": "x", "url": rcv.URL, "events": []string{"thread.completed"}})
		wantProblem(t, resp, raw, http.StatusBadRequest, "validation_failed")

		w := createWebhook(t, e, map[string]any{"name": "ops", "url": rcv.URL, "events": []string{"step.failed", "thread.failed"}})
		if w.MinSeverity != "major" || !w.Enabled || w.Format != "standard" || len(w.Events) != 2 {
			t.Fatalf("created %+v", w)
		}
		resp, raw = e.Do(t, http.MethodGet, "/v1/webhooks", e.AdminKey, nil)
		wantStatus(t, resp, raw, http.StatusOK)
		if l := decode[opshttp.WebhookListJSON](t, raw).Webhooks; len(l) != 1 || l[0].Secret != "" || l[0].SecretHint != "…"+w.Secret[len(w.Secret)-4:] {
			t.Fatalf("list %+v", l)
		}

		// A failed step: first attempt refused (503), retried once the
		// backoff has passed, delivered; both attempts carry the same id.
		rcv.set(1, false)
		c := connectWS(t, e, memberKey)
		th := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		c.ok(step(th, "charge", "success", "c0", nil))
		c.ok(step(th, "charge", "failed", "c1", nil))
		pollUntil(t, "a first attempt", func() bool { return len(rcv.requests()) >= 1 })
		// The receiver answers before the engine settles: wait for the log.
		var ds []opshttp.DeliveryJSON
		pollUntil(t, "the refused attempt logged", func() bool {
			ds = deliveries(t, e, w.ID)
			return len(ds) != 1 || ds[0].LastStatus != 0
		})
		if len(ds) != 1 || ds[0].State != "pending" || ds[0].Attempts != 1 || ds[0].LastStatus != 503 ||
			ds[0].NextAttemptAt == nil || ds[0].LastError == "" {
			t.Fatalf("after the refused attempt: %+v", ds)
		}
		e.Clock.Advance(time.Minute)
		got := rcv.waitFor(t, 1)
		if len(got) != 2 || got[0].ID != got[1].ID {
			t.Fatalf("requests %+v", got)
		}
		p := verify(t, w.Secret, got[1])
		if p.Type != domain.EventStepFailed || p.Data.ThreadID != th || p.Data.StepName != "charge" || p.Data.StepStatus != "failed" {
			t.Fatalf("payload %+v", p)
		}
		pollUntil(t, "the retry settled", func() bool {
			ds = deliveries(t, e, w.ID)
			return len(ds) != 1 || ds[0].State != "pending"
		})
		if len(ds) != 1 || ds[0].State != "delivered" || ds[0].Attempts != 2 || ds[0].LastStatus != 200 || ds[0].SettledAt == nil {
			t.Fatalf("delivery log %+v", ds)
		}

		// Send test, slack format: {"text": …}, signed the same way.
		resp, raw = e.Do(t, http.MethodPatch, "/v1/webhooks/"+w.ID, e.AdminKey, map[string]any{"format": "slack"})
		wantStatus(t, resp, raw, http.StatusOK)
		resp, raw = e.Do(t, http.MethodPost, "/v1/webhooks/"+w.ID+"/test", memberKey, nil)
		wantProblem(t, resp, raw, http.StatusForbidden, "forbidden")
		resp, raw = e.Do(t, http.MethodPost, "/v1/webhooks/"+w.ID+"/test", e.AdminKey, nil)
		wantStatus(t, resp, raw, http.StatusAccepted)
		got = rcv.waitFor(t, 2)
		last := got[len(got)-1]
		sec, _ := strconv.ParseInt(last.Timestamp, 10, 64)
		if !domain.VerifyWebhook(w.Secret, last.ID, time.Unix(sec, 0), time.Unix(sec, 0), last.Body, last.Signature, time.Minute) {
			t.Fatal("slack delivery not signed")
		}
		var slack map[string]string
		if err := json.Unmarshal(last.Body, &slack); err != nil || len(slack) != 1 || slack["text"] == "" {
			t.Fatalf("slack body %s", last.Body)
		}

		// Rotation: the new secret signs, the old one no longer does.
		resp, raw = e.Do(t, http.MethodPost, "/v1/webhooks/"+w.ID+"/rotate-secret", e.AdminKey, nil)
		wantStatus(t, resp, raw, http.StatusOK)
		rotated := decode[opshttp.WebhookJSON](t, raw)
		if rotated.Secret == "" || rotated.Secret == w.Secret {
			t.Fatalf("rotated %+v", rotated)
		}
		if n := len(listAudit(t, e, e.AdminKey, url.Values{"action": {"webhook."}}).Entries); n != 3 {
			t.Fatalf("audit lines %d; want create, update, rotate", n)
		}
		resp, raw = e.Do(t, http.MethodDelete, "/v1/webhooks/"+w.ID, e.AdminKey, nil)
		wantStatus(t, resp, raw, http.StatusNoContent)
		resp, raw = e.Do(t, http.MethodGet, "/v1/webhooks/"+w.ID+"/deliveries", e.AdminKey, nil)
		wantProblem(t, resp, raw, http.StatusNotFound, "not_found")
	})
}

// Deliveries pending when the engine stops are sent by the next engine on
// the same database.
func TestWebhooksSurviveRestart(t *testing.T) {
	t.Parallel()
	forEachDialectD(t, func(t *testing.T, d sqldb.Dialect) {
		rcv := newReceiver(t)
		rcv.set(0, true)
		first := enginetest.Start(t, d, enginetest.WithConfig(alertsFast))
		w := createWebhook(t, first, map[string]any{"name": "ops", "url": rcv.URL, "events": []string{"step.failed"}})
		c := connectWS(t, first, first.AdminKey)
		th := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		c.ok(step(th, "charge", "failed", "c1", nil))
		pollUntil(t, "a first attempt", func() bool { return len(rcv.requests()) >= 1 })
		if got := rcv.requests(); len(got) != 1 || got[0].Status != 503 {
			t.Fatalf("first engine's attempts %+v", got)
		}
		_ = c.conn.CloseNow()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := first.Server.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}

		rcv.set(0, false)
		second := enginetest.Start(t, d, enginetest.WithoutOwner(), enginetest.WithDatabase(first.Config.Database.URL),
			enginetest.WithConfig(alertsFast))
		second.Clock.Advance(time.Hour) // past the retry time the first engine set
		got := rcv.waitFor(t, 1)
		if len(got) != 2 || got[1].ID != got[0].ID {
			t.Fatalf("requests %+v", got)
		}
		if p := verify(t, w.Secret, got[1]); p.Data.ThreadID != th {
			t.Fatalf("payload %+v", p)
		}
	})
}

// The sweep records max_duration_exceeded on a thread past its contract's
// max_duration (visible in GraphQL without a new step), once however many
// sweeps run, and the overdue alert reaches the webhook.
func TestAlertSweepRecordsOverdueThreads(t *testing.T) {
	t.Parallel()
	forEachDialectD(t, func(t *testing.T, d sqldb.Dialect) {
		e := enginetest.Start(t, d, enginetest.WithConfig(func(c *config.Config) { alertsFast(c); c.Alerts.SweepInterval = time.Hour }))
		rcv := newReceiver(t)
		w := createWebhook(t, e, map[string]any{"name": "ops", "url": rcv.URL, "events": []string{"thread.overdue"}})
		resp, body := postYAML(t, e, e.AdminKey, "application/yaml", contractYAML(1))
		wantStatus(t, resp, body, http.StatusCreated)
		c := connectWS(t, e, e.AdminKey)
		th := c.ok(map[string]any{"action": "startThread", "contractName": "order_flow", "refs": map[string]any{}, "role": "checkout"})["threadId"].(string)
		fresh := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)

		if res, err := e.Server.Alerts.Sweep(context.Background()); err != nil || res.Overdue != 0 {
			t.Fatalf("early sweep %+v %v", res, err)
		}
		e.Clock.Advance(2 * time.Hour) // max_duration is 1h30m
		for i := range 3 {
			res, err := e.Server.Alerts.Sweep(context.Background())
			want := 0
			if i == 0 {
				want = 1
			}
			if err != nil || res.Overdue != want {
				t.Fatalf("sweep %d: %+v %v", i, res, err)
			}
		}
		got := rcv.waitFor(t, 1)
		p := verify(t, w.Secret, got[0])
		if p.Type != domain.EventThreadOverdue || p.Data.ThreadID != th || p.Data.ContractName != "order_flow" || p.Data.Severity != "major" {
			t.Fatalf("payload %+v", p)
		}
		_, r, raw := gqlPost(t, e, e.AdminKey, `query($id: ID!) { thread(id: $id) { health { status }
 validationResults { stepName overallStatus validations { type severity rule } } } }`, map[string]any{"id": th})
		thread, _ := r.Data["thread"].(map[string]any)
		vrs, _ := thread["validationResults"].([]any)
		if len(r.Errors) > 0 || len(vrs) != 1 {
			t.Fatalf("graphql %s", raw)
		}
		vr := vrs[0].(map[string]any)
		issue := vr["validations"].([]any)[0].(map[string]any)
		if vr["overallStatus"] != "violated" || issue["type"] != "max_duration_exceeded" || issue["rule"] != "max_duration" ||
			thread["health"].(map[string]any)["status"] != "VIOLATED" {
			t.Fatalf("graphql %s", raw)
		}
		// The free-form thread has no max_duration: nothing recorded.
		_, r, raw = gqlPost(t, e, e.AdminKey, `query($id: ID!) { thread(id: $id) { validationResults { stepName } } }`, map[string]any{"id": fresh})
		if vrs := r.Data["thread"].(map[string]any)["validationResults"].([]any); len(vrs) != 0 {
			t.Fatalf("free-form thread %s", raw)
		}
		if ds := settledDeliveries(t, e, w.ID); len(ds) != 1 { // nothing more queued, nothing more sent
			t.Fatalf("deliveries %+v; want 1", ds)
		}
		if n := len(rcv.requests()); n != 1 {
			t.Fatalf("receiver got %d requests; want 1", n)
		}
	})
}
