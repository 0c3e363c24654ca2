package wsapi

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/threadengine/engine/adapters/httperr"
	"github.com/threadengine/engine/adapters/limits"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/delivery"
	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
)

// actionFunc answers one frame of a connected session: a reply, or an error
// that handle turns into the error reply (once, in fail).
type actionFunc func(s *session, ctx context.Context, m Message) (reply, error)

// actionSpec is one entry of the protocol.
type actionSpec struct {
	run actionFunc
	// endsSession: the connection closes once the reply is written.
	endsSession bool
	// fireAndForget: every SDK sends this action without waiting for the
	// reply, so it is answered (errors too) only when the frame carries a
	// requestId. The Go SDK parks each reply nobody waits for in a 256-slot
	// buffer and, once it is full, drops the reply to its next real request:
	// answering its heartbeats (every 30 s), acks and subscriptions broke the
	// connection after ~256 of them.
	fireAndForget bool
	// free: not counted against limits.ws.frames_per_second (acks,
	// heartbeats, cancelling: cheap, and refusing them would only make
	// the client retry them).
	free bool
}

// actions is the protocol after connect, by action name. Aliases are the
// other SDKs' names for the same action.
var actions = map[string]actionSpec{
	"startThread":       {run: (*session).startThread},
	"recordThreadEvent": {run: (*session).recordStep},
	"addRefs":           {run: (*session).addRefs},
	"linkThread":        {run: (*session).addRefs},
	"inviteParty":       {run: (*session).invite},
	"joinThread":        {run: (*session).join},
	"threadEnd":         {run: (*session).endThread},
	"closeThread":       {run: (*session).endThread},
	"subscribe":         {run: (*session).subscribe, fireAndForget: true, free: true},
	"unsubscribe":       {run: (*session).unsubscribe, fireAndForget: true, free: true},
	"ack_notification":  {run: (*session).ack, fireAndForget: true, free: true},
	"heartbeat":         {run: (*session).heartbeat, fireAndForget: true, free: true},
	"closeConnection":   {run: (*session).closeConnection, endsSession: true, free: true},
	"thread":            {run: (*session).thread},
	"waitFor":           {run: (*session).waitFor},
	"cancelWait":        {run: (*session).cancelWait, fireAndForget: true, free: true},
}

// The protocol's own refusals; their messages are the SDKs' and the
// reference engine's wire text.
var (
	errNotConnected     = domain.NewBase(domain.KindUnauthenticated, domain.CodeUnauthenticated, "Not connected: send connect with an API key first")
	errAlreadyConnected = domain.NewBase(domain.KindInvalid, domain.CodeValidationFailed, "Already connected")
)

// handle processes one frame and reports whether the connection is finished.
func (s *session) handle(data []byte) bool {
	start := time.Now()
	rated, refused := s.rateBeforeDecoding(data, start)
	if refused {
		return false
	}
	m, err := Decode(data)
	if err != nil {
		if errors.Is(err, errTooManyFields) {
			s.h.Refusals.Refused(limits.WSMessageFields)
		}
		r := s.fail("error", frameError(err))
		if errors.Is(err, errInvalidJSON) {
			r.Details = "each frame must be one JSON object with a string \"action\""
		}
		s.send("", r)
		s.refused(r.Code, start)
		return false
	}
	ctx, f := s.beginFrame(m, start)
	requestID := m.Str("requestId")
	if m.Action == "connect" {
		done, err := s.connect(ctx, requestID, m)
		f.end(err)
		return done
	}
	p := s.authenticated()
	if p == nil {
		s.send(requestID, s.fail(m.Action, errNotConnected))
		f.end(errNotConnected)
		return false
	}
	if err := malformedFrame(m); err != nil {
		// Answered even without requestId: no SDK sends it, so nobody's
		// reply buffer fills, and a raw client learns its frame was refused.
		s.send(requestID, s.failIn(ctx, m.Action, err))
		f.end(err)
		return false
	}
	spec, ok := actions[m.Action]
	if !ok {
		err := domain.Invalid("action", "Unknown action: %s", m.Action)
		s.send(requestID, s.failIn(ctx, m.Action, err))
		f.end(err)
		return false
	}
	var r reply
	if !spec.free && !rated {
		err = s.checkRate(len(data))
	}
	s.leaveReadSlot() // read and decoded: the action runs without the slot
	if err == nil {
		r, err = spec.run(s, delivery.WithOrigin(authz.WithPrincipal(ctx, *p), s.hub), m)
	}
	if errors.Is(err, errAnswered) {
		if m.Action != "waitFor" { // a pending wait ends its frame when it answers
			f.end(nil)
		}
		return false
	}
	if err != nil {
		r = s.failIn(ctx, m.Action, err)
	}
	if spec.fireAndForget && requestID == "" {
		if err != nil {
			s.log.DebugContext(ctx, "ws: no reply to a fire-and-forget frame without requestId", "action", m.Action, "err", err)
		}
		f.end(err)
		return false
	}
	s.send(requestID, r)
	f.end(err)
	if spec.endsSession && err == nil {
		s.flushAndClose(websocket.StatusNormalClosure, "closed by client request")
		return true
	}
	return false
}

// rateBeforeDecoding takes a connected session's frame from its
// principal's rates before the frame is decoded, when a scan of its bytes
// (frameSniffer: no allocation, no map of fields) names an action that
// counts: a frame over the rates is answered rate_limited with its action
// and requestId and never decoded, so a flood refused costs the engine one
// pass over each frame (decoding the refused frames was 11 % of the
// engine's CPU under the write flood of test/abuse). rated says the frame
// has been taken from the rates already; a frame whose action the scan
// cannot tell is decoded and judged as before.
func (s *session) rateBeforeDecoding(data []byte, start time.Time) (rated, refused bool) {
	if s.share.Load() == nil {
		return false, false
	}
	var f frameSniffer
	_, _ = f.Write(data)
	action := f.action()
	if spec, ok := actions[action]; !ok || spec.free {
		return false, false
	}
	err := s.checkRate(len(data))
	if err == nil {
		return true, false
	}
	s.leaveReadSlot()
	r := s.fail(action, err)
	s.send(f.requestID(), r)
	s.h.metrics().ActionHandled(actionLabel(action), r.Code, time.Since(start))
	return true, true
}

// failure is an action's error with what the error reply should name.
type failure struct {
	err      error
	prefix   string // prepended to the message
	stepName string
	threadID string
}

func (f *failure) Error() string { return f.prefix + f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// invalidFrame is a malformed field of a frame: refused, with this message.
func invalidFrame(msg string) error { return domain.Invalid("frame", "%s", msg) }

// frameError is the coded refusal of a frame Decode refused: too many
// fields is a limit, anything else a malformed frame (Decode's text).
func frameError(err error) error {
	if errors.Is(err, errTooManyFields) {
		return domain.LimitExceeded(domain.KindTooLarge, string(limits.WSMessageFields), "%s", err.Error())
	}
	return domain.Invalid("", "%s", err.Error())
}

// fail builds the error reply for err from its public view: the message
// (after the failure's prefix), the stable code, the offending field and,
// when a retry may succeed, retryAfterMs. It is the only maker of error
// replies, so every refusal carries a code; an internal error is logged
// once, here.
func (s *session) fail(action string, err error) *errorReply { return s.failIn(s.ctx, action, err) }

// failIn is fail for a frame handled in ctx (its log line carries the
// frame's trace id).
func (s *session) failIn(ctx context.Context, action string, err error) *errorReply {
	var f *failure
	if !errors.As(err, &f) {
		f = &failure{err: err}
	}
	p := httperr.Report(ctx, s.log, f.err, "action", action)
	return &errorReply{replyHead: replyHead{Action: action, Status: "error", Message: f.prefix + p.Message, Code: string(p.Code)},
		Field: p.Field, RetryAfterMs: p.RetryAfterMillis(), StepName: f.stepName, ThreadID: f.threadID}
}

// connect authenticates the socket; it reports whether the connection is
// finished and the error it answered.
func (s *session) connect(ctx context.Context, requestID string, m Message) (bool, error) {
	if s.authenticated() != nil {
		s.send(requestID, s.fail("connect", errAlreadyConnected))
		return false, errAlreadyConnected
	}
	key := m.Str("apiKey")
	var p domain.Principal
	var err error
	if key == "" {
		err = domain.ErrUnauthenticated
	} else {
		p, err = s.h.Authn.AuthenticateAPIKey(ctx, key)
	}
	if err != nil {
		r := s.fail("connect", err)
		switch domain.KindOf(err) {
		case domain.KindInternal, domain.KindUnavailable:
			// Not the key's fault: the client may connect again later. The
			// text is what SDKs (@threadengine/sdk) recognise; the code
			// and retryAfterMs say the same to those reading them.
			r.Message = "Authentication is temporarily unavailable"
			s.send(requestID, r)
			s.flushAndClose(websocket.StatusTryAgainLater, "authentication is temporarily unavailable")
		default:
			r.Message = "Invalid API key" // the SDKs' and the reference engine's text; the code says why
			s.send(requestID, r)
			s.flushAndClose(websocket.StatusPolicyViolation, "invalid API key")
		}
		return true, err
	}
	if err := s.h.promote(s, p); err != nil {
		s.h.Refusals.Refused(limits.WSPerPrincipal)
		s.send(requestID, s.fail("connect", err))
		s.flushAndClose(websocket.StatusTryAgainLater, "too many WebSockets for this principal")
		return true, err
	}
	s.mu.Lock()
	s.principal, s.apiKey = &p, key
	s.mu.Unlock()
	s.serviceName = m.Str("serviceName")
	s.hub = s.h.Threads.Hub().Register(s, p.ID, m.Int("maxInFlight", 10))
	r := &connectReply{replyHead: success("connect", "Connected successfully"), OwnerID: p.ID, CompanyID: p.ID}
	if evs, ok := m.StrList("subscribedEvents"); ok && len(evs) > 0 {
		r.SubscribedEvents = evs
	}
	s.send(requestID, r)
	return false, nil
}

// refsAndTags reads a start frame's optional refs and tags.
func refsAndTags(m Message) (map[string]string, []string, error) {
	refs, ok := m.StrMap("refs")
	if !ok {
		return nil, nil, invalidFrame("refs must be an object")
	}
	tags, ok := m.StrList("tags")
	if !ok {
		return nil, nil, invalidFrame("tags must be a list of strings")
	}
	return refs, tags, nil
}

func (s *session) startThread(ctx context.Context, m Message) (reply, error) {
	refs, tags, err := refsAndTags(m)
	if err != nil {
		return nil, err
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
	th, err := s.threads.Commands.StartThread.Handle(ctx, threads.StartThreadInput{Contract: m.Str("contractName"), Role: m.Str("role"),
		Label: refs["label"], ServiceName: svc, Refs: refs, Tags: tags})
	if err != nil {
		return nil, err
	}
	s.addThread(th.ID, m.Str("role"), false)
	r := &startThreadReply{replyHead: success(m.Action, "Thread started successfully"), ThreadID: th.ID,
		Label: th.Label, Refs: refs, AccessLevel: string(domain.AccessOwner), Tags: th.Tags}
	if th.ContractName != "" {
		r.ContractID, r.ContractName, r.ContractVersion = th.ContractName, th.ContractName, th.ContractVersion
	}
	return r, nil
}

func (s *session) recordStep(ctx context.Context, m Message) (reply, error) {
	stepName := m.Str("stepName")
	bad := func(msg string) error { return &failure{err: invalidFrame(msg), stepName: stepName} }
	if !m.Has("context") {
		return nil, bad("Missing required field: context")
	}
	sctx, ok := m.StrMap("context")
	if !ok {
		return nil, bad("context must be an object")
	}
	started, ok1 := m.Time("startedAt")
	finished, ok2 := m.Time("finishedAt")
	if !ok1 || !ok2 {
		return nil, bad("startedAt and finishedAt must be ISO-8601 timestamps")
	}
	var meta map[string]any
	if raw := m.Str("threadify_metadata"); raw != "" && !strings.HasPrefix(strings.TrimSpace(raw), "{") {
		meta = map[string]any{"message": raw}
	} else if meta, ok = m.Obj("threadify_metadata"); !ok {
		return nil, bad("threadify_metadata must be an object or a string")
	}
	subs, ok := m.SubSteps()
	if !ok {
		return nil, bad("subSteps must be a list of {name, status, payload, recordedAt}")
	}
	refs, ok := m.StrMap("refs")
	if !ok {
		return nil, bad("refs must be an object")
	}
	key := m.Str("idempotencyKey")
	if key == "" && stepName != "" {
		key = AutoIdempotencyKey(stepName, sctx)
	}
	svc := m.Str("serviceName")
	if svc == "" {
		svc = s.serviceName
	}
	threadID := m.Str("threadId")
	in := threads.RecordStepInput{ThreadID: threadID, Role: s.parties.Role(threadID), StepName: stepName, Status: m.Str("status"),
		IdempotencyKey: key, InvocationID: m.Str("invocationId"), Context: sctx, Metadata: meta, ServiceName: svc,
		StartedAt: started, FinishedAt: finished, Refs: refs}
	for _, ss := range subs {
		si := threads.SubStepInput{Name: ss.Name, Status: ss.Status, Payload: ss.Payload}
		if ss.RecordedAt != nil {
			si.RecordedAt = *ss.RecordedAt
		}
		in.SubSteps = append(in.SubSteps, si)
	}
	res, err := s.threads.Commands.RecordStep.Handle(ctx, in)
	if err != nil {
		return nil, &failure{err: err, stepName: stepName, threadID: in.ThreadID}
	}
	if res.ThreadStatus.Closed() {
		s.parties.Ended(in.ThreadID)
	}
	r := &stepReply{replyHead: success(m.Action, "Step Event recorded successfully"), ThreadID: in.ThreadID,
		StepID: res.StepID, StepName: stepName, IdempotencyKey: res.IdempotencyKey, RetryCount: res.RetryCount,
		Attempt: res.Attempt, ThreadStatus: string(res.ThreadStatus), IsDuplicate: res.Duplicate}
	if res.Duplicate {
		// A duplicate is answered status "error" + isDuplicate:true: the Node
		// (0.1.24), Go and Python (0.4.0) SDKs each flag a duplicate only on a
		// non-success status, and each treats that pair as a duplicate rather
		// than a failure (Node and Python resolve with duplicate:true; Go
		// returns the result with Duplicate set and an IsDuplicateError error).
		r.Status, r.Message = "error", "Step already completed (duplicate)"
		if res.SameInvocation {
			r.Message = "Step attempt already recorded (duplicate)"
		}
	}
	if v := res.Validation; v != nil {
		r.Validation = &validationJSON{OverallStatus: v.OverallStatus, Issues: v.Issues,
			CriticalCount: v.CriticalCount, WarningCount: v.WarningCount}
	}
	if isTrue(m, "waitFor") && !res.Duplicate {
		stepVerdict(r, res)
	}
	return r, nil
}

func (s *session) addRefs(ctx context.Context, m Message) (reply, error) {
	threadID := m.Str("threadId")
	refs, ok := m.StrMap("refs")
	if !ok {
		return nil, invalidFrame("refs must be an object")
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
		return nil, invalidFrame("Missing required field: threadId")
	}
	if err := s.threads.Commands.AddRefs.Handle(ctx, threads.AddRefsInput{ThreadID: threadID, Role: s.parties.Role(threadID), Refs: refs}); err != nil {
		return nil, &failure{err: err, threadID: threadID}
	}
	return &threadReply{replyHead: success(m.Action, "References added successfully"), ThreadID: threadID}, nil
}

func (s *session) invite(ctx context.Context, m Message) (reply, error) {
	inv, err := s.threads.Commands.InviteParty.Handle(ctx, threads.InviteInput{ThreadID: m.Str("threadId"), Conn: &s.parties, Role: m.Str("role"),
		AccessLevel: m.Str("accessLevel"), ExpiresIn: m.Str("expiresIn")})
	if err != nil {
		return nil, err
	}
	return &inviteReply{replyHead: success(m.Action, "Invitation created"), ThreadToken: inv.Token,
		ThreadID: inv.ThreadID, Role: inv.Role, AccessLevel: string(inv.AccessLevel), ExpiresAt: inv.ExpiresAt.UTC().Format(time.RFC3339)}, nil
}

func (s *session) join(ctx context.Context, m Message) (reply, error) {
	res, err := s.threads.Commands.JoinThread.Handle(ctx, threads.JoinInput{Token: m.Str("threadToken"), ThreadID: m.Str("threadId"), Role: m.Str("role")})
	if err != nil {
		return nil, err
	}
	s.addThread(res.Thread.ID, res.Role, res.AccessLevel != domain.AccessOwner)
	return &joinReply{replyHead: success(m.Action, "Successfully joined thread"), ThreadID: res.Thread.ID,
		ContractID: res.Thread.ContractName, ContractName: res.Thread.ContractName, Role: res.Role,
		AccessLevel: string(res.AccessLevel), ThreadStatus: string(res.Thread.Status)}, nil
}

func (s *session) endThread(ctx context.Context, m Message) (reply, error) {
	const prefix = "Failed to end thread: "
	threadID := m.Str("threadId")
	if threadID == "" {
		return nil, &failure{err: invalidFrame("Missing required field: threadId"), prefix: prefix}
	}
	// An object reason arrives spread into the frame (Node SDK): what is not
	// a transport field is the caller's object.
	var obj map[string]any
	if extras := m.Extras(transportFields...); len(extras) > 0 {
		obj = extras
	}
	reason := m.Str("reason")
	if r, ok := m.Obj("reason"); ok && r != nil { // an object sent as reason
		obj, reason = mergeObj(obj, r), ""
	}
	th, err := s.threads.Commands.EndThread.Handle(ctx, threads.EndThreadInput{ThreadID: threadID, Role: s.parties.Role(threadID),
		Status: m.Str("status"), Reason: reason, ReasonObject: obj})
	if err != nil {
		return nil, &failure{err: err, prefix: prefix, threadID: threadID}
	}
	s.parties.Ended(th.ID)
	at := ""
	if th.CompletedAt != nil {
		at = th.CompletedAt.UTC().Format(time.RFC3339Nano)
	}
	r := &endThreadReply{replyHead: success(m.Action, "Thread "+string(th.Status)+" successfully"), ThreadID: th.ID,
		ThreadStatus: string(th.Status), ClosedAt: at}
	if th.Status == domain.ThreadCancelled {
		r.CancelledAt = at
	} else {
		r.CompletedAt = at
	}
	return r, nil
}

// transportFields are the protocol's own fields of a threadEnd frame, never
// part of a cancel reason.
var transportFields = []string{"action", "threadId", "status", "reason", "requestId"}

func mergeObj(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// knownEvents is both SDK vocabularies; eventTypes are advisory (routing is by
// step name), but a misspelt type is reported rather than silently ignored.
var knownEvents = map[string]bool{
	"*": true, "step.*": true, "rule.*": true, "thread.*": true, "execution.*": true, "validation.*": true,
	"step.success": true, "step.failed": true, "rule.passed": true, "rule.violated": true,
	"thread.completed": true, "thread.failed": true, "thread.cancelled": true, "execution.success": true, "execution.failed": true,
	"validation.passed": true, "validation.violated": true,
}

func (s *session) subscribe(_ context.Context, m Message) (reply, error) {
	name := m.Str("stepName")
	if name == "" {
		return nil, invalidFrame("Step name is required")
	}
	evs, ok := m.StrList("eventTypes")
	if !ok {
		return nil, invalidFrame("eventTypes must be a list of strings")
	}
	for _, e := range evs {
		if !knownEvents[e] {
			return nil, invalidFrame("Unknown event type: " + e)
		}
	}
	if err := s.checkSubscription(name); err != nil {
		return nil, err
	}
	if s.subs == nil {
		s.subs = map[string]bool{}
	}
	s.subs[name] = true
	s.noteVocabulary(evs)
	s.hub.Subscribe(name, routedEventTypes(name, evs))
	return &subscribeReply{replyHead: success(m.Action, "Subscribed to "+name), StepName: name, EventTypes: evs}, nil
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

func (s *session) unsubscribe(_ context.Context, m Message) (reply, error) {
	name := m.Str("stepName")
	if name == "" {
		return nil, invalidFrame("Step name is required")
	}
	s.hub.Unsubscribe(name)
	delete(s.subs, name)
	r := success(m.Action, "Unsubscribed from "+name)
	return &r, nil
}

func (s *session) ack(_ context.Context, m Message) (reply, error) {
	token := m.Str("ackToken")
	if token == "" {
		token = m.Str("ack_token")
	}
	if token == "" { // an ack by id settles the notification too (any replica, any connection)
		token = m.Str("notification_id")
	}
	if token == "" {
		return nil, invalidFrame("Missing required field: ackToken")
	}
	if m.Str("requestId") == "" { // nobody reads a reply: do not wait for the settlement
		s.hub.AckLater(token)
		return &ackReply{replyHead: success(m.Action, "")}, nil
	}
	return &ackReply{replyHead: success(m.Action, ""), NotificationID: m.Str("notification_id"),
		Acknowledged: s.hub.Ack(token)}, nil
}

func (s *session) heartbeat(_ context.Context, m Message) (reply, error) {
	r := success(m.Action, "")
	return &r, nil
}

func (s *session) closeConnection(_ context.Context, m Message) (reply, error) {
	r := success(m.Action, "Connection will be closed")
	return &r, nil
}
