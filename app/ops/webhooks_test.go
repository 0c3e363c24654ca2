package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadengine/engine/app/ops"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
	"github.com/threadengine/engine/ports/portstest"
)

// scriptSender answers from a script of statuses (0: a transport error)
// and records each request.
type scriptSender struct {
	mu      sync.Mutex
	answers []int
	got     []ports.WebhookRequest
	private bool // every answer comes from a private address
}

// Send answers the next scripted status; 0 is a refused connection, -1 a
// receiver that answers nothing until the request is cancelled.
func (s *scriptSender) Send(ctx context.Context, r ports.WebhookRequest) (ports.WebhookResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, r)
	status := 200
	if len(s.answers) > 0 {
		status, s.answers = s.answers[0], s.answers[1:]
	}
	if status == -1 {
		<-ctx.Done()
		return ports.WebhookResponse{}, ctx.Err()
	}
	if status == 0 {
		return ports.WebhookResponse{Private: s.private}, errors.New("connection refused")
	}
	return ports.WebhookResponse{Status: status, Body: "busy", Private: s.private}, nil
}

type webhookFixture struct {
	hooks  *ops.Webhooks
	store  *portstest.Webhooks
	ids    *portstest.Identity
	sender *scriptSender
	clock  *portstest.Clock
	admin  context.Context
}

func newWebhookFixture(t *testing.T, allow ...string) *webhookFixture {
	t.Helper()
	f := &webhookFixture{store: portstest.NewWebhooks(), ids: portstest.NewIdentity(), sender: &scriptSender{},
		clock: portstest.NewClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))}
	f.hooks = ops.NewWebhooks(ops.WebhooksDeps{Store: f.store, Sender: f.sender, Audit: f.ids, Clock: f.clock,
		AllowedHosts: allow, Retry: domain.WebhookRetry{Base: time.Minute, Max: time.Hour, MaxAttempts: 3},
		Jitter: func() float64 { return 0 }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	f.admin = as(domain.Principal{Kind: domain.PrincipalUser, ID: "admin", Role: domain.RoleAdmin})
	return f
}

func ref[T any](v T) *T { return &v }

func TestWebhookManagementIsForAdmins(t *testing.T) {
	t.Parallel()
	f := newWebhookFixture(t, "hooks.example.com")
	member := as(domain.Principal{Kind: domain.PrincipalUser, ID: "m", Role: domain.RoleMember})
	in := ops.WebhookInput{Name: ref("ops"), URL: ref("https://hooks.example.com/x"), Events: &[]string{"step.failed"}}
	if _, _, err := f.hooks.Create.Handle(member, in); domain.CodeOf(err) != domain.CodeForbidden {
		t.Fatalf("member create: %v", err)
	}
	if _, err := f.hooks.List.Handle(member); domain.CodeOf(err) != domain.CodeForbidden {
		t.Fatalf("member list: %v", err)
	}
	if _, _, err := f.hooks.Create.Handle(context.Background(), in); domain.CodeOf(err) != domain.CodeUnauthenticated {
		t.Fatalf("anonymous create: %v", err)
	}
	bad := in
	bad.URL = ref("https://evil.example.net/x")
	if _, _, err := f.hooks.Create.Handle(f.admin, bad); domain.CodeOf(err) != domain.CodeWebhookURLNotAllowed {
		t.Fatalf("host off the allow-list: %v", err)
	}
	bad.URL = ref("gopher://hooks.example.com/")
	if _, _, err := f.hooks.Create.Handle(f.admin, bad); domain.CodeOf(err) != domain.CodeWebhookURLInvalid {
		t.Fatalf("gopher: %v", err)
	}
	bad = in
	bad.MinSeverity = ref("fatal")
	if _, _, err := f.hooks.Create.Handle(f.admin, bad); domain.CodeOf(err) != domain.CodeValidationFailed {
		t.Fatalf("bad severity: %v", err)
	}
	v, secret, err := f.hooks.Create.Handle(f.admin, in)
	if err != nil || v.Secret != "" || len(secret) < 40 || v.SecretHint != "…"+secret[len(secret)-4:] || v.MinSeverity != domain.SeverityMajor {
		t.Fatalf("create %+v %q %v", v, secret, err)
	}
	if _, err := f.hooks.Update.Handle(member, v.ID, ops.WebhookInput{Enabled: ref(false)}); domain.CodeOf(err) != domain.CodeForbidden {
		t.Fatalf("member update: %v", err)
	}
	if _, err := f.hooks.SendTest.Handle(member, v.ID); domain.CodeOf(err) != domain.CodeForbidden {
		t.Fatalf("member test: %v", err)
	}
	if _, err := f.hooks.Deliveries.Handle(member, v.ID, 0); domain.CodeOf(err) != domain.CodeForbidden {
		t.Fatalf("member deliveries: %v", err)
	}
	if err := f.hooks.Delete.Handle(member, v.ID); domain.CodeOf(err) != domain.CodeForbidden {
		t.Fatalf("member delete: %v", err)
	}
	if n := len(f.ids.AuditLog()); n != 1 {
		t.Fatalf("%d audit lines; want the one creation", n)
	}
}

// A delivery is signed, retried with the schedule after failures (same
// webhook-id), and failed after the last attempt; slack webhooks get
// {"text": …}.
func TestDeliverDueRetriesThenFails(t *testing.T) {
	t.Parallel()
	f := newWebhookFixture(t)
	ctx := context.Background()
	v, secret, err := f.hooks.Create.Handle(f.admin, ops.WebhookInput{Name: ref("ops"), URL: ref("http://127.0.0.1:9/x")})
	if err != nil {
		t.Fatal(err)
	}
	f.sender.answers = []int{503, 0, 500}
	if _, err := f.hooks.SendTest.Handle(f.admin, v.ID); err != nil {
		t.Fatal(err)
	}
	wantRound := func(want ops.DeliveryRound) {
		t.Helper()
		r, err := f.hooks.Deliverer.DeliverDue(ctx)
		if err != nil || r != want {
			t.Fatalf("round %+v %v; want %+v", r, err, want)
		}
	}
	wantRound(ops.DeliveryRound{Attempted: 1, Retried: 1})
	wantRound(ops.DeliveryRound{}) // not due before a minute
	f.clock.Advance(59 * time.Second)
	wantRound(ops.DeliveryRound{})
	f.clock.Advance(time.Second)
	wantRound(ops.DeliveryRound{Attempted: 1, Retried: 1})
	f.clock.Advance(time.Minute) // second retry waits two minutes
	wantRound(ops.DeliveryRound{})
	f.clock.Advance(time.Minute)
	wantRound(ops.DeliveryRound{Attempted: 1, Failed: 1})
	f.clock.Advance(time.Hour)
	wantRound(ops.DeliveryRound{})

	if len(f.sender.got) != 3 {
		t.Fatalf("%d requests", len(f.sender.got))
	}
	id := f.sender.got[0].Headers["webhook-id"]
	for i, r := range f.sender.got {
		ts, _ := strconv.ParseInt(r.Headers["webhook-timestamp"], 10, 64)
		if r.Headers["webhook-id"] != id || !domain.VerifyWebhook(secret, id, time.Unix(ts, 0), time.Unix(ts, 0), r.Body,
			r.Headers["webhook-signature"], 5*time.Minute) {
			t.Fatalf("request %d not signed by the webhook's secret: %+v", i, r.Headers)
		}
	}
	var p domain.WebhookPayload
	if err := json.Unmarshal(f.sender.got[0].Body, &p); err != nil || p.Type != domain.EventWebhookTest {
		t.Fatalf("body %s", f.sender.got[0].Body)
	}
	ds, err := f.hooks.Deliveries.Handle(f.admin, v.ID, 0)
	if err != nil || len(ds) != 1 || ds[0].State != ports.DeliveryFailed || ds[0].Attempts != 3 || ds[0].LastStatus != 500 ||
		ds[0].LastError != "HTTP 500: busy" {
		t.Fatalf("log %+v %v", ds, err)
	}

	// Slack format.
	if _, err := f.hooks.Update.Handle(f.admin, v.ID, ops.WebhookInput{Format: ref("slack")}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.hooks.SendTest.Handle(f.admin, v.ID); err != nil {
		t.Fatal(err)
	}
	wantRound(ops.DeliveryRound{Attempted: 1, Delivered: 1})
	var slack struct{ Text string }
	if err := json.Unmarshal(f.sender.got[3].Body, &slack); err != nil || slack.Text == "" {
		t.Fatalf("slack body %s", f.sender.got[3].Body)
	}
	// A disabled webhook's deliveries wait.
	if _, err := f.hooks.Update.Handle(f.admin, v.ID, ops.WebhookInput{Enabled: ref(false)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.hooks.SendTest.Handle(f.admin, v.ID); err != nil {
		t.Fatal(err)
	}
	wantRound(ops.DeliveryRound{})
	if n, _ := f.store.CountPendingDeliveries(ctx); n != 1 {
		t.Fatalf("pending %d", n)
	}
}

// An attempt cut short by the engine's own shutdown is not counted: the
// delivery stays pending with its attempts, for the next engine.
func TestDeliveryInterruptedByShutdownIsNotCounted(t *testing.T) {
	t.Parallel()
	f := newWebhookFixture(t)
	v, _, err := f.hooks.Create.Handle(f.admin, ops.WebhookInput{Name: ref("ops"), URL: ref("http://127.0.0.1:9/x")})
	if err != nil {
		t.Fatal(err)
	}
	f.sender.answers = []int{-1}
	if _, err := f.hooks.SendTest.Handle(f.admin, v.ID); err != nil {
		t.Fatal(err)
	}
	stopping, stop := context.WithCancel(context.Background())
	stop()
	_, _ = f.hooks.Deliverer.DeliverDue(stopping)
	ds, err := f.hooks.Deliveries.Handle(f.admin, v.ID, 0)
	if err != nil || len(ds) != 1 || ds[0].State != ports.DeliveryPending || ds[0].Attempts != 0 || ds[0].LastError != "" {
		t.Fatalf("after an interrupted attempt: %+v %v; want pending with no attempt counted", ds, err)
	}
	if r, err := f.hooks.Deliverer.DeliverDue(context.Background()); err != nil || r.Delivered != 1 {
		t.Fatalf("the next engine's round: %+v %v", r, err)
	}
	if ds, _ := f.hooks.Deliveries.Handle(f.admin, v.ID, 0); ds[0].State != ports.DeliveryDelivered || ds[0].Attempts != 1 {
		t.Fatalf("delivered %+v", ds)
	}
}

// A host the allow-list no longer names is not posted to.
func TestDeliverDueRechecksTheAllowList(t *testing.T) {
	t.Parallel()
	f := newWebhookFixture(t)
	v, _, err := f.hooks.Create.Handle(f.admin, ops.WebhookInput{Name: ref("ops"), URL: ref("https://old.example.com/x")})
	if err != nil {
		t.Fatal(err)
	}
	strict := ops.NewWebhooks(ops.WebhooksDeps{Store: f.store, Sender: f.sender, Audit: f.ids, Clock: f.clock,
		AllowedHosts: []string{"new.example.com"}, Retry: domain.WebhookRetry{Base: time.Minute, Max: time.Hour, MaxAttempts: 1},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if _, err := strict.SendTest.Handle(f.admin, v.ID); err != nil {
		t.Fatal(err)
	}
	r, err := strict.Deliverer.DeliverDue(context.Background())
	if err != nil || r != (ops.DeliveryRound{Attempted: 1, Failed: 1}) || len(f.sender.got) != 0 {
		t.Fatalf("round %+v %v, %d requests", r, err, len(f.sender.got))
	}
}

// An alert about a thread links to the thread's page under the engine URL
// in force when it is sent, in both formats; without an engine URL the
// stored payload goes out unchanged.
func TestDeliveredAlertsLinkToTheirThread(t *testing.T) {
	t.Parallel()
	f := newWebhookFixture(t)
	engineURL := ""
	linked := ops.NewWebhooks(ops.WebhooksDeps{Store: f.store, Sender: f.sender, Audit: f.ids, Clock: f.clock,
		Retry: domain.WebhookRetry{Base: time.Minute, Max: time.Hour, MaxAttempts: 1}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		EngineURL: func(context.Context) (string, error) { return engineURL, nil }})
	v, _, err := linked.Create.Handle(f.admin, ops.WebhookInput{Name: ref("ops"), URL: ref("https://hooks.example.com/x")})
	if err != nil {
		t.Fatal(err)
	}
	alert, ok := ports.AlertOf(ports.NotificationRecord{ID: "n1", ThreadID: "order 42", StepName: "pay", NotificationType: "execution.failed",
		StepStatus: "failed", Message: "card declined", CreatedAt: f.clock.Now()})
	if !ok {
		t.Fatal("execution.failed is not an alert")
	}
	send := func(id string) []byte {
		t.Helper()
		if err := f.store.EnqueueDelivery(context.Background(), ports.WebhookDelivery{ID: id, WebhookID: v.ID, EventType: alert.Event,
			Payload: alert.Payload, State: ports.DeliveryPending, NextAttemptAt: f.clock.Now(), CreatedAt: f.clock.Now()}); err != nil {
			t.Fatal(err)
		}
		n := len(f.sender.got)
		if r, err := linked.Deliverer.DeliverDue(context.Background()); err != nil || r.Delivered != 1 || len(f.sender.got) != n+1 {
			t.Fatalf("round %+v %v", r, err)
		}
		return f.sender.got[n].Body
	}
	if body := send("msg_1"); string(body) != string(alert.Payload) {
		t.Fatalf("without an engine URL the payload changed: %s", body)
	}
	engineURL = "https://te.example.com/prefix/"
	var p domain.WebhookPayload
	if body := send("msg_2"); json.Unmarshal(body, &p) != nil || p.Data.URL != "https://te.example.com/prefix/ui/threads/order%2042" ||
		p.Data.ThreadID != "order 42" || p.Data.Message != "card declined" {
		t.Fatalf("standard body %s", body)
	}
	if _, err := linked.Update.Handle(f.admin, v.ID, ops.WebhookInput{Format: ref("slack")}); err != nil {
		t.Fatal(err)
	}
	var slack struct{ Text string }
	if body := send("msg_3"); json.Unmarshal(body, &slack) != nil || !strings.HasSuffix(slack.Text, " https://te.example.com/prefix/ui/threads/order%2042") {
		t.Fatalf("slack body %s", body)
	}
}

// With private addresses reachable, a failed attempt on one is logged as
// one coded outcome: an internal service's answer (status, body, latency)
// and a closed port look the same.
func TestPrivateDestinationFailuresAreNotDetailed(t *testing.T) {
	t.Parallel()
	f := newWebhookFixture(t)
	f.sender.private = true
	v, _, err := f.hooks.Create.Handle(f.admin, ops.WebhookInput{Name: ref("internal"), URL: ref("http://10.0.0.5:8080/x")})
	if err != nil {
		t.Fatal(err)
	}
	for _, answer := range []int{404, 0} { // an open port, a closed one
		f.sender.answers = []int{answer}
		if _, err := f.hooks.SendTest.Handle(f.admin, v.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := f.hooks.Deliverer.DeliverDue(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	logged, err := f.hooks.Deliveries.Handle(f.admin, v.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(logged) != 2 {
		t.Fatalf("%d deliveries logged", len(logged))
	}
	for _, d := range logged {
		if d.Attempts != 1 || d.LastStatus != 0 || d.LastLatency != 0 || strings.Contains(d.LastError, "busy") || strings.Contains(d.LastError, "refused") ||
			d.LastError != logged[0].LastError || d.LastError == "" {
			t.Errorf("private destination logged %+v", d)
		}
	}
}
