package wsapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/app"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// hardReadLimit closes a connection whose frame is absurdly large; frames
// between MaxMessageBytes and this are drained and answered with an error.
const hardReadLimit = 16 << 20

// Handler serves GET /threads.
type Handler struct {
	Threads *app.Threads
	Authn   app.Authenticator
	Log     *slog.Logger
	// PingInterval is how often the server pings (default 30 s); a missing
	// pong within the same interval closes the connection.
	PingInterval time.Duration
}

// Mount adds the route.
func (h *Handler) Mount(e *echo.Echo) {
	e.GET("/threads", func(c echo.Context) error {
		h.ServeHTTP(c.Response(), c.Request())
		return nil
	})
}

// ServeHTTP upgrades and runs one connection until it closes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The API key travels in the first frame, never in a cookie, so a
	// cross-origin page gains nothing by opening a socket: origins are not checked.
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	conn.SetReadLimit(hardReadLimit)
	log := h.Log
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{h: h, conn: conn, log: log, out: make(chan []byte, 512), ctx: ctx, cancel: cancel}
	defer s.shutdown()
	go s.writeLoop()
	go s.pingLoop()
	s.readLoop()
}

type session struct {
	h      *Handler
	conn   *websocket.Conn
	log    *slog.Logger
	out    chan []byte
	ctx    context.Context
	cancel context.CancelFunc

	mu          sync.Mutex // guards principal (re-checked by pingLoop)
	principal   *domain.Principal
	apiKey      string
	serviceName string
	threads     []string // started or joined here, in order (inviteParty default)
	requestID   string   // the request being answered; echoed when the client sent one
	hub         *app.HubSession

	closeOnce sync.Once
}

// Deliver implements app.Subscriber: a non-blocking enqueue of a push.
func (s *session) Deliver(ackToken string, n ports.NotificationRecord) bool {
	frame, err := json.Marshal(map[string]any{"action": "notification", "ackToken": ackToken,
		"notification": notificationJSON(n)})
	if err != nil {
		return false
	}
	select {
	case <-s.ctx.Done():
		return false
	case s.out <- frame:
		return true
	default:
		return false
	}
}

func notificationJSON(n ports.NotificationRecord) map[string]any {
	details := n.Details
	if details == nil {
		details = map[string]any{}
	}
	status := n.ValidationStatus
	if status == "" {
		status = "none"
	}
	return map[string]any{
		"notificationId": n.ID, "threadId": n.ThreadID, "stepId": n.StepID, "stepName": n.StepName,
		"idempotencyKey": n.IdempotencyKey, "ownerId": n.OwnerID, "contractName": n.ContractName,
		"source": n.Source, "notificationType": n.NotificationType, "stepStatus": n.StepStatus,
		"status": status, "violationType": n.ViolationType, "severity": n.Severity, "message": n.Message,
		"details": details, "timestamp": n.CreatedAt.UTC().Format(time.RFC3339Nano),
	}
}

func (s *session) shutdown() {
	s.closeOnce.Do(func() {
		if s.hub != nil {
			s.hub.Close()
		}
		s.cancel()
		_ = s.conn.CloseNow()
	})
}

func (s *session) writeLoop() {
	for {
		select {
		case <-s.ctx.Done():
			return
		case frame := <-s.out:
			wctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
			err := s.conn.Write(wctx, websocket.MessageText, frame)
			cancel()
			if err != nil {
				s.shutdown()
				return
			}
		}
	}
}

// recheck re-authenticates the connection's key, so a revoked or expired
// key, a deactivated user or a changed role takes effect on open sockets
// within one ping interval.
func (s *session) recheck() {
	s.mu.Lock()
	key, connected := s.apiKey, s.principal != nil
	s.mu.Unlock()
	if !connected {
		return
	}
	p, err := s.h.Authn.AuthenticateAPIKey(s.ctx, key)
	if err != nil {
		k := domain.KindOf(err)
		if k == domain.KindInternal || k == domain.KindUnavailable {
			return // keep the connection through a database hiccup
		}
		_ = s.conn.Close(websocket.StatusPolicyViolation, "API key no longer valid")
		s.shutdown()
		return
	}
	s.mu.Lock()
	s.principal = &p
	s.mu.Unlock()
}

func (s *session) pingLoop() {
	every := s.h.PingInterval
	if every <= 0 {
		every = 30 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			pctx, cancel := context.WithTimeout(s.ctx, every)
			err := s.conn.Ping(pctx)
			cancel()
			if err != nil {
				s.shutdown()
				return
			}
			s.recheck()
		}
	}
}

// send queues a reply; it blocks (backpressure on this connection's reads)
// while the socket is slow.
func (s *session) send(v map[string]any) {
	if s.requestID != "" {
		v["requestId"] = s.requestID
	}
	frame, err := json.Marshal(v)
	if err != nil {
		s.log.Error("ws: encode reply", "err", err)
		return
	}
	select {
	case s.out <- frame:
	case <-s.ctx.Done():
	}
}

// flushAndClose waits until queued replies are written, then closes normally.
func (s *session) flushAndClose(code websocket.StatusCode, reason string) {
	deadline := time.Now().Add(5 * time.Second)
	for len(s.out) > 0 && time.Now().Before(deadline) && s.ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	// The write loop may be mid-write of the last frame; give it a moment.
	time.Sleep(20 * time.Millisecond)
	_ = s.conn.Close(code, reason)
	s.shutdown()
}

func (s *session) readLoop() {
	for {
		typ, r, err := s.conn.Reader(s.ctx)
		if err != nil {
			return
		}
		data, err := io.ReadAll(io.LimitReader(r, MaxMessageBytes+1))
		if err != nil {
			return
		}
		if len(data) > MaxMessageBytes {
			var f frameSniffer
			_, _ = f.Write(data)
			if _, err := io.Copy(&f, r); err != nil {
				return
			}
			action := f.action()
			if action == "" {
				action = "error"
			}
			s.requestID = f.requestID()
			s.send(errorReply(action, fmt.Sprintf("Message too large: frames are limited to %d bytes", MaxMessageBytes)))
			s.requestID = ""
			continue
		}
		if typ != websocket.MessageText && typ != websocket.MessageBinary {
			continue
		}
		if done := s.handle(data); done {
			return
		}
	}
}

func errorReply(action, msg string) map[string]any {
	return map[string]any{"action": action, "status": "error", "message": msg}
}

// handle processes one frame and reports whether the connection is finished.
func (s *session) handle(data []byte) bool {
	m, err := Decode(data)
	if errors.Is(err, errInvalidJSON) {
		s.send(map[string]any{"action": "error", "status": "error", "message": "Invalid JSON payload",
			"details": "each frame must be one JSON object with a string \"action\""})
		return false
	}
	if err != nil {
		s.send(errorReply("error", err.Error()))
		return false
	}
	s.requestID = m.Str("requestId")
	defer func() { s.requestID = "" }()
	if m.Action == "connect" {
		return s.connect(m)
	}
	s.mu.Lock()
	pp := s.principal
	s.mu.Unlock()
	if pp == nil {
		s.send(errorReply(m.Action, "Not connected: send connect with an API key first"))
		return false
	}
	ctx := app.WithPrincipal(s.ctx, *pp)
	switch m.Action {
	case "startThread":
		s.startThread(ctx, m)
	case "recordThreadEvent":
		s.recordStep(ctx, m)
	case "addRefs", "linkThread":
		s.addRefs(ctx, m)
	case "inviteParty":
		s.invite(ctx, m)
	case "joinThread":
		s.join(ctx, m)
	case "threadEnd", "closeThread":
		s.endThread(ctx, m)
	case "subscribe":
		s.subscribe(m)
	case "unsubscribe":
		s.unsubscribe(m)
	case "ack_notification":
		token := m.Str("ackToken")
		if token == "" {
			token = m.Str("ack_token")
		}
		reply := map[string]any{"action": m.Action, "status": "success", "notification_id": m.Str("notification_id")}
		if token == "" {
			reply = errorReply(m.Action, "Missing required field: ackToken")
		} else {
			reply["acknowledged"] = s.hub.Ack(token)
		}
		s.send(reply)
	case "heartbeat":
		s.send(map[string]any{"action": "heartbeat", "status": "success"})
	case "closeConnection":
		s.send(map[string]any{"action": "closeConnection", "status": "success", "message": "Connection will be closed"})
		s.flushAndClose(websocket.StatusNormalClosure, "closed by client request")
		return true
	default:
		s.send(errorReply(m.Action, "Unknown action: "+m.Action))
	}
	return false
}

func (s *session) connect(m Message) bool {
	s.mu.Lock()
	already := s.principal != nil
	s.mu.Unlock()
	if already {
		s.send(errorReply("connect", "Already connected"))
		return false
	}
	key := m.Str("apiKey")
	var p domain.Principal
	var err error
	if key == "" {
		err = domain.ErrUnauthenticated
	} else {
		p, err = s.h.Authn.AuthenticateAPIKey(s.ctx, key)
	}
	if err != nil {
		if domain.KindOf(err) == domain.KindInternal || domain.KindOf(err) == domain.KindUnavailable {
			s.log.Error("ws: authenticate", "err", err)
			s.send(errorReply("connect", "Authentication is temporarily unavailable"))
		} else {
			s.send(errorReply("connect", "Invalid API key"))
		}
		s.flushAndClose(websocket.StatusPolicyViolation, "invalid API key")
		return true
	}
	s.mu.Lock()
	s.principal, s.apiKey = &p, key
	s.mu.Unlock()
	s.serviceName = m.Str("serviceName")
	maxInFlight := m.Int("maxInFlight", 10)
	s.hub = s.h.Threads.Hub().Register(s, p.ID, maxInFlight)
	reply := map[string]any{"action": "connect", "status": "success", "message": "Connected successfully",
		"ownerId": p.ID, "companyId": p.ID}
	if evs, ok := m.StrList("subscribedEvents"); ok && len(evs) > 0 {
		reply["subscribedEvents"] = evs
	}
	s.send(reply)
	return false
}

// maxSessionThreads bounds the per-socket thread list of long-lived
// connections; only its first entry matters (inviteParty's default).
const maxSessionThreads = 1024

// addThread records a thread started or joined here. Joined threads also make
// the session eligible for their notifications (owned ones already are).
func (s *session) addThread(id string, joined bool) {
	if len(s.threads) < maxSessionThreads && !hasString(s.threads, id) {
		s.threads = append(s.threads, id)
	}
	if joined {
		s.hub.AddThread(id)
	}
}

// fail sends the error reply for err, with the domain message when it is safe.
func (s *session) fail(action, prefix string, err error, extra map[string]any) {
	de := domain.AsError(err)
	msg := de.Message
	if de.Kind == domain.KindInternal {
		s.log.Error("ws: "+action, "err", err)
		msg = "internal error"
	}
	reply := errorReply(action, prefix+msg)
	if de.Code != "" {
		reply["code"] = string(de.Code)
	}
	for k, v := range extra {
		reply[k] = v
	}
	s.send(reply)
}

func (s *session) startThread(ctx context.Context, m Message) {
	refs, ok := m.StrMap("refs")
	if !ok {
		s.send(errorReply(m.Action, "refs must be an object"))
		return
	}
	tags, ok := m.StrList("tags")
	if !ok {
		s.send(errorReply(m.Action, "tags must be a list of strings"))
		return
	}
	if refs == nil {
		refs = map[string]string{}
	}
	if l := m.Str("label"); l != "" && refs["label"] == "" {
		refs["label"] = l
	}
	svc := refs["serviceName"]
	if svc == "" {
		svc = m.Str("serviceName")
	}
	if svc == "" {
		svc = s.serviceName
	}
	th, err := s.h.Threads.StartThread(ctx, app.StartThreadInput{Contract: m.Str("contractName"), Role: m.Str("role"),
		Label: refs["label"], ServiceName: svc, Refs: refs, Tags: tags})
	if err != nil {
		s.fail(m.Action, "", err, nil)
		return
	}
	s.addThread(th.ID, false)
	reply := map[string]any{"action": m.Action, "status": "success", "message": "Thread started successfully",
		"threadId": th.ID, "label": th.Label, "refs": refs, "accessLevel": app.AccessOwner}
	if len(th.Tags) > 0 {
		reply["tags"] = th.Tags
	}
	if th.ContractName != "" {
		reply["contractId"], reply["contractName"], reply["contractVersion"] = th.ContractID, th.ContractName, th.ContractVersion
	}
	s.send(reply)
}

func (s *session) recordStep(ctx context.Context, m Message) {
	stepName := m.Str("stepName")
	fail := func(msg string) {
		s.send(map[string]any{"action": m.Action, "status": "error", "message": msg, "stepName": stepName})
	}
	if !m.Has("context") {
		fail("Missing required field: context")
		return
	}
	sctx, ok := m.StrMap("context")
	if !ok {
		fail("context must be an object")
		return
	}
	started, ok1 := m.Time("startedAt")
	finished, ok2 := m.Time("finishedAt")
	if !ok1 || !ok2 {
		fail("startedAt and finishedAt must be ISO-8601 timestamps")
		return
	}
	var meta map[string]any
	if raw := m.Str("threadify_metadata"); raw != "" && !strings.HasPrefix(strings.TrimSpace(raw), "{") {
		meta = map[string]any{"message": raw}
	} else if meta, ok = m.Obj("threadify_metadata"); !ok {
		fail("threadify_metadata must be an object or a string")
		return
	}
	subs, ok := m.SubSteps()
	if !ok {
		fail("subSteps must be a list of {name, status, payload, recordedAt}")
		return
	}
	refs, ok := m.StrMap("refs")
	if !ok {
		fail("refs must be an object")
		return
	}
	key := m.Str("idempotencyKey")
	if key == "" && stepName != "" {
		key = AutoIdempotencyKey(stepName, sctx)
	}
	svc := m.Str("serviceName")
	if svc == "" {
		svc = s.serviceName
	}
	in := app.RecordStepInput{ThreadID: m.Str("threadId"), StepName: stepName, Status: m.Str("status"),
		IdempotencyKey: key, InvocationID: m.Str("invocationId"), Context: sctx, Metadata: meta, ServiceName: svc,
		StartedAt: started, FinishedAt: finished}
	for _, ss := range subs {
		si := app.SubStepInput{Name: ss.Name, Status: ss.Status, Payload: ss.Payload}
		if ss.RecordedAt != nil {
			si.RecordedAt = *ss.RecordedAt
		}
		in.SubSteps = append(in.SubSteps, si)
	}
	res, err := s.h.Threads.RecordStep(ctx, in)
	if err != nil {
		s.fail(m.Action, "", err, map[string]any{"stepName": stepName, "threadId": in.ThreadID})
		return
	}
	if len(refs) > 0 && !res.Duplicate {
		if err := s.h.Threads.AddRefs(ctx, in.ThreadID, refs); err != nil {
			s.log.Warn("ws: refs sent with a step were not stored", "err", err, "thread_id", in.ThreadID)
		}
	}
	reply := map[string]any{"action": m.Action, "status": "success", "message": "Step Event recorded successfully",
		"threadId": in.ThreadID, "stepId": res.StepID, "stepName": stepName, "idempotencyKey": res.IdempotencyKey,
		"retryCount": res.RetryCount, "attempt": res.Attempt, "threadStatus": res.ThreadStatus}
	if res.Duplicate {
		reply["isDuplicate"] = true
		reply["message"] = "Step already completed (duplicate)"
		if res.SameInvocation {
			reply["message"] = "Step attempt already recorded (duplicate)"
		}
	}
	if v := res.Validation; v != nil {
		reply["validation"] = map[string]any{"overallStatus": v.OverallStatus, "issues": v.Issues,
			"criticalCount": v.CriticalCount, "warningCount": v.WarningCount}
	}
	s.send(reply)
}

func (s *session) addRefs(ctx context.Context, m Message) {
	threadID := m.Str("threadId")
	refs, ok := m.StrMap("refs")
	if !ok {
		s.send(errorReply(m.Action, "refs must be an object"))
		return
	}
	if m.Action == "linkThread" && len(refs) == 0 {
		rel := m.Str("relationship")
		if rel == "" {
			rel = "parent"
		}
		if target := m.Str("linkedThreadId"); target != "" {
			refs = map[string]string{"linkedThread:" + rel: target}
		}
	}
	if threadID == "" {
		s.send(errorReply(m.Action, "Missing required field: threadId"))
		return
	}
	if err := s.h.Threads.AddRefs(ctx, threadID, refs); err != nil {
		s.fail(m.Action, "", err, map[string]any{"threadId": threadID})
		return
	}
	s.send(map[string]any{"action": m.Action, "status": "success", "message": "References added successfully",
		"threadId": threadID})
}

func (s *session) invite(ctx context.Context, m Message) {
	threadID := m.Str("threadId")
	if threadID == "" && len(s.threads) > 0 {
		threadID = s.threads[0]
	}
	inv, err := s.h.Threads.Invite(ctx, app.InviteInput{ThreadID: threadID, Role: m.Str("role"),
		AccessLevel: m.Str("accessLevel"), ExpiresIn: m.Str("expiresIn")})
	if err != nil {
		s.fail(m.Action, "", err, nil)
		return
	}
	s.send(map[string]any{"action": m.Action, "status": "success", "message": "Invitation created",
		"threadToken": inv.Token, "threadId": inv.ThreadID, "role": inv.Role, "accessLevel": inv.AccessLevel,
		"expiresAt": inv.ExpiresAt.Unix()})
}

func (s *session) join(ctx context.Context, m Message) {
	res, err := s.h.Threads.Join(ctx, app.JoinInput{Token: m.Str("threadToken"), ThreadID: m.Str("threadId"), Role: m.Str("role")})
	if err != nil {
		s.fail(m.Action, "", err, nil)
		return
	}
	s.addThread(res.Thread.ID, res.AccessLevel != app.AccessOwner)
	s.send(map[string]any{"action": m.Action, "status": "success", "message": "Successfully joined thread",
		"threadId": res.Thread.ID, "contractId": res.Thread.ContractID, "contractName": res.Thread.ContractName,
		"role": res.Role, "accessLevel": res.AccessLevel, "threadStatus": res.Thread.Status})
}

func (s *session) endThread(ctx context.Context, m Message) {
	threadID := m.Str("threadId")
	if threadID == "" {
		s.send(errorReply(m.Action, "Failed to end thread: Missing required field: threadId"))
		return
	}
	reason := m.Str("reason")
	if extras := m.Extras("action", "threadId", "status", "reason"); len(extras) > 0 {
		b, _ := json.Marshal(extras)
		if reason != "" {
			reason += " "
		}
		reason += string(b)
	}
	th, err := s.h.Threads.EndThread(ctx, threadID, m.Str("status"), reason)
	if err != nil {
		s.fail(m.Action, "Failed to end thread: ", err, map[string]any{"threadId": threadID})
		return
	}
	at := ""
	if th.CompletedAt != nil {
		at = th.CompletedAt.UTC().Format(time.RFC3339Nano)
	}
	reply := map[string]any{"action": m.Action, "status": "success", "threadId": th.ID, "threadStatus": th.Status,
		"closedAt": at, "message": "Thread " + th.Status + " successfully"}
	if th.Status == app.ThreadCancelled {
		reply["cancelledAt"] = at
	} else {
		reply["completedAt"] = at
	}
	s.send(reply)
}

// knownEvents is both SDK vocabularies; eventTypes are advisory (routing is by
// step name), but a misspelt type is reported rather than silently ignored.
var knownEvents = map[string]bool{
	"*": true, "step.*": true, "rule.*": true, "thread.*": true, "execution.*": true, "validation.*": true,
	"step.success": true, "step.failed": true, "rule.passed": true, "rule.violated": true,
	"thread.completed": true, "thread.cancelled": true, "execution.success": true, "execution.failed": true,
	"validation.passed": true, "validation.violated": true,
}

func (s *session) subscribe(m Message) {
	name := m.Str("stepName")
	if name == "" {
		s.send(errorReply(m.Action, "Step name is required"))
		return
	}
	evs, ok := m.StrList("eventTypes")
	if !ok {
		s.send(errorReply(m.Action, "eventTypes must be a list of strings"))
		return
	}
	for _, e := range evs {
		if !knownEvents[e] {
			s.send(errorReply(m.Action, "Unknown event type: "+e))
			return
		}
	}
	s.hub.Subscribe(name, routedEventTypes(name, evs))
	s.send(map[string]any{"action": m.Action, "status": "success", "message": "Subscribed to " + name,
		"stepName": name, "eventTypes": evs})
}

// routedEventTypes widens a thread-level subscription: both SDKs expand "*"
// (and Node "step.*") to step and rule types only, and the reference engine
// treats eventTypes as advisory, so SDK code relies on conn.subscribe('*', h)
// to hear thread.completed/cancelled. On the "global" key a list naming no
// thread type therefore also admits thread events; one that names thread
// types is honoured as given.
func routedEventTypes(key string, evs []string) []string {
	if key != "global" || len(evs) == 0 {
		return evs
	}
	for _, e := range evs {
		if e == "*" || strings.HasPrefix(e, "thread.") {
			return evs
		}
	}
	return append(append(make([]string, 0, len(evs)+1), evs...), "thread.*")
}

func (s *session) unsubscribe(m Message) {
	name := m.Str("stepName")
	if name == "" {
		s.send(errorReply(m.Action, "Step name is required"))
		return
	}
	s.hub.Unsubscribe(name)
	s.send(map[string]any{"action": m.Action, "status": "success", "message": "Unsubscribed from " + name})
}
