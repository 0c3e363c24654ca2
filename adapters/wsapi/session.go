package wsapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/trace"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/limits"
	"github.com/threadengine/engine/app/delivery"
	"github.com/threadengine/engine/app/identity"
	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// hardReadLimit closes a connection whose frame is absurdly large; frames
// between MaxMessageBytes and this are drained and answered with an error.
// Before connect the limits are MaxPreConnectBytes and preConnectReadLimit:
// a connect frame is small, and a socket nobody authenticated must not make
// the engine read (and decode) megabytes.
const (
	hardReadLimit       = 16 << 20
	MaxPreConnectBytes  = 16 << 10
	preConnectReadLimit = 64 << 10
)

// maxFrameBytesInFlight bounds the bytes of frames being received (paid as
// their fragments arrive), decoded and handled at once across every socket
// of a Handler; a socket waits for room (TCP pushes back on its client) up
// to pendingWait, then is closed 1013, so many sockets sending megabyte
// frames cannot multiply the engine's memory.
const maxFrameBytesInFlight = 16 << 20

// Handler serves GET /threads.
type Handler struct {
	Threads *threads.Module
	Authn   identity.Authenticator
	Log     *slog.Logger
	// PingInterval is how often the server pings (default 30 s); a missing
	// pong within the same interval closes the connection.
	PingInterval time.Duration
	// Limits bound sockets and subscriptions (zero: the defaults).
	Limits config.WSLimits
	// Refusals counts what the limits refuse (nil: not counted).
	Refusals *limits.Counter
	// Tracer traces frames and pushes (nil: not traced); Clock measures
	// the delivery lag (nil: the system clock).
	Tracer trace.TracerProvider
	Clock  ports.Clock
	// Metrics counts sockets, actions and the delivery lag (nil: not
	// counted).
	Metrics ports.Metrics

	tracerOnce sync.Once
	tracerV    trace.Tracer

	admission  admission
	waitCounts waitCounts
	frames     *byteBudget
	framesMu   sync.Once
	mu         sync.Mutex
	live       map[*session]struct{}
	closing    bool
	sessions   sync.WaitGroup

	// afterMessageTimeout replaces time.AfterFunc for the message deadline
	// (tests fire it when they choose; nil: time.AfterFunc).
	afterMessageTimeout func(d time.Duration, f func()) (stop func() bool)
}

// metrics is where the sockets are counted (never nil).
func (h *Handler) metrics() ports.Metrics {
	if h.Metrics == nil {
		return ports.NopMetrics{}
	}
	return h.Metrics
}

// Mount adds the route; the client address is echo's (server.trusted_proxies).
func (h *Handler) Mount(e *echo.Echo) {
	e.GET("/threads", func(c echo.Context) error {
		h.serve(c.Response(), c.Request(), c.RealIP())
		return nil
	})
}

// ServeHTTP upgrades and runs one connection until it closes; the client
// address is the peer's.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	addr, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		addr = r.RemoteAddr
	}
	h.serve(w, r, addr)
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, addr string) {
	// The API key travels in the first frame, never in a cookie, so a
	// cross-origin page gains nothing by opening a socket: origins are not checked.
	w = closeOnRefusal{w}
	if err := h.admit(addr); err != nil {
		h.refuseUpgrade(w, domain.AsError(err))
		return
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		h.release(&session{addr: addr})
		return
	}
	conn.SetReadLimit(preConnectReadLimit)
	m := h.metrics()
	m.SessionOpened()
	defer m.SessionClosed()
	log := h.Log
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{h: h, threads: h.Threads.Application(), conn: conn, log: log, out: make(chan []byte, 512), ctx: ctx, cancel: cancel,
		addr: addr}
	defer h.release(s)
	if !h.track(s) {
		_ = conn.Close(websocket.StatusGoingAway, "server shutting down")
		cancel()
		return
	}
	defer h.untrack(s)
	defer s.shutdown()
	defer s.connectDeadline()()
	go s.writeLoop()
	go s.pingLoop()
	s.readLoop()
}

func (h *Handler) frameBudget() *byteBudget {
	h.framesMu.Do(func() { h.frames = newByteBudget(limits.WSFrameBytes, h.Refusals, maxFrameBytesInFlight) })
	return h.frames
}

// track registers a live session; false once Shutdown has begun.
func (h *Handler) track(s *session) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return false
	}
	if h.live == nil {
		h.live = map[*session]struct{}{}
	}
	h.live[s] = struct{}{}
	h.sessions.Add(1)
	return true
}

func (h *Handler) untrack(s *session) {
	h.mu.Lock()
	delete(h.live, s)
	h.mu.Unlock()
	h.sessions.Done()
}

// Shutdown closes every open socket with a close frame (1001 going away) and
// waits until their sessions have finished the frame they were handling, or
// until ctx ends. Sockets opened afterwards are closed at once. It is called
// before the store closes, so no frame is answered "internal error" because
// the database went away under it.
func (h *Handler) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.closing = true
	live := make([]*session, 0, len(h.live))
	for s := range h.live {
		live = append(live, s)
	}
	h.mu.Unlock()
	for _, s := range live {
		go s.closeWith(websocket.StatusGoingAway, "server shutting down")
	}
	done := make(chan struct{})
	go func() { h.sessions.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// session is one connection: its read loop handles frames in order, its
// write loop sends queued frames, its ping loop checks the peer and re-checks
// the API key.
type session struct {
	h       *Handler
	addr    string              // client address, for the unauthenticated per-address count
	threads threads.Application // h.Threads' use cases
	conn    *websocket.Conn
	log     *slog.Logger
	out     chan []byte
	ctx     context.Context
	cancel  context.CancelFunc

	mu          sync.Mutex // guards principal (re-checked by pingLoop)
	principal   *domain.Principal
	apiKey      string
	serviceName string
	parties     threads.ConnParties // threads started or joined here, and the role on each
	hub         *delivery.HubSession
	admitted    string          // principal key once connect succeeded (admission)
	subs        map[string]bool // subscription keys held (limits.ws.max_subscriptions)
	waits       waits
	stepVocab   atomic.Bool // subscribed with step.*/rule.* names: pushes use them
	execVocab   atomic.Bool // subscribed with execution.*/validation.* names (Go): pushes keep them

	// share is the principal's (limits.go), set by connect; nil before.
	share atomic.Pointer[principalShare]
	// qmu guards qheld, the bytes of frames queued on out paid from the
	// share's queued budget, and qclosed, set when the session ends and
	// everything still queued has been given back.
	qmu     sync.Mutex
	qheld   int64
	qclosed bool
	// readSlot is the principal's reading slot this socket holds (only
	// the read loop touches it).
	readSlot chan struct{}
	// pause is how long the read loop waits before reading the next frame
	// after one was refused rate_limited (read loop only).
	pause time.Duration

	closeOnce   sync.Once
	closeCode   websocket.StatusCode // set by flushAndClose before its marker
	closeReason string
}

// Deliver implements delivery.Subscriber: a non-blocking enqueue of a push.
func (s *session) Deliver(ackToken string, n ports.NotificationRecord) bool {
	frame, err := json.Marshal(notificationFrame{Action: "notification", AckToken: ackToken,
		Notification: s.inVocabulary(newNotificationJSON(n))})
	if err != nil {
		return false
	}
	queued := s.enqueue(frame, false)
	s.pushed(n, queued)
	return queued
}

func (s *session) shutdown() {
	s.closeOnce.Do(func() {
		if s.hub != nil {
			s.hub.Close()
		}
		s.cancel()
		_ = s.conn.CloseNow()
		s.closeQueue()
	})
}

// enqueue queues frame for the write loop, paying its bytes from the
// principal's queued budget. wait says whether to wait for room (a reply:
// the read loop pauses, so a client that does not read stops being read)
// or to give up at once (a push: the hub delivers it later).
func (s *session) enqueue(frame []byte, wait bool) bool {
	n := int64(len(frame))
	sh := s.share.Load()
	if sh != nil && n > 0 {
		if wait && !sh.queued.take(s.ctx, n) || !wait && !sh.queued.tryTake(n) {
			return false
		}
		s.qmu.Lock()
		if s.qclosed {
			s.qmu.Unlock()
			sh.queued.give(n)
			return false
		}
		s.qheld += n
		s.qmu.Unlock()
	}
	if wait {
		select {
		case s.out <- frame:
			return true
		case <-s.ctx.Done():
		}
	} else {
		select {
		case s.out <- frame:
			return true
		default:
		}
	}
	s.unqueue(n)
	return false
}

// unqueue gives back the bytes of a frame written or dropped. Frames queued
// before connect were not paid for; they are first in the queue, so taking
// at most what is held keeps the count exact overall.
func (s *session) unqueue(n int64) {
	sh := s.share.Load()
	if sh == nil {
		return
	}
	s.qmu.Lock()
	k := min(n, s.qheld)
	s.qheld -= k
	s.qmu.Unlock()
	sh.queued.give(k)
}

// closeQueue gives back everything still queued when the session ends.
func (s *session) closeQueue() {
	s.qmu.Lock()
	k := s.qheld
	s.qheld, s.qclosed = 0, true
	s.qmu.Unlock()
	if sh := s.share.Load(); sh != nil {
		sh.queued.give(k)
	}
}

// closeWith sends a close frame, waits briefly for the peer's, and ends the
// session; the read loop then returns.
func (s *session) closeWith(code websocket.StatusCode, reason string) {
	_ = s.conn.Close(code, reason)
	s.shutdown()
}

func (s *session) writeLoop() {
	for {
		select {
		case <-s.ctx.Done():
			return
		case frame := <-s.out:
			if frame == nil { // flushAndClose: everything before was written
				s.closeWith(s.closeCode, s.closeReason)
				return
			}
			wctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
			err := s.conn.Write(wctx, websocket.MessageText, frame)
			cancel()
			s.unqueue(int64(len(frame)))
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
		s.h.Refusals.Refused(limits.WSCredentialsWithdrawn)
		s.closeWith(websocket.StatusPolicyViolation, "API key no longer valid")
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

// send queues a reply, echoing requestID when the client sent one; it blocks
// (backpressure on this connection's reads) while the socket is slow.
func (s *session) send(requestID string, r reply) {
	r.head().RequestID = requestID
	frame, err := json.Marshal(r)
	if err != nil {
		s.log.Error("ws: encode reply", "err", err)
		return
	}
	s.enqueue(frame, true)
}

// flushAndClose closes the connection normally once the replies queued
// before it are written: the write loop, which sends frames in order, does
// the close when it reaches the marker (a nil frame). It returns when the
// session has ended (at most closeFlushLimit later).
func (s *session) flushAndClose(code websocket.StatusCode, reason string) {
	s.closeCode, s.closeReason = code, reason // published to the write loop by the send below
	select {
	case s.out <- nil:
	case <-s.ctx.Done():
		return
	}
	t := time.NewTimer(closeFlushLimit)
	defer t.Stop()
	select {
	case <-s.ctx.Done():
	case <-t.C: // the peer does not read: close without the handshake
		s.shutdown()
	}
}

// closeFlushLimit bounds flushAndClose (the close handshake waits up to
// 5 s for the peer's close frame).
const closeFlushLimit = 10 * time.Second

func (s *session) readLoop() {
	for {
		if !s.paced() {
			return
		}
		typ, r, err := s.conn.Reader(s.ctx)
		if err != nil {
			return
		}
		// The frame's header has arrived; its payload stays unread (in the
		// kernel, pushing back on the client) until a slot is free.
		if !s.takeReadSlot() {
			return
		}
		if s.readFrameAndHandle(typ, r) {
			return
		}
	}
}

// readFrameAndHandle reads one frame and handles it, holding the reading
// slot until the action starts; it reports whether the session is done.
func (s *session) readFrameAndHandle(typ websocket.MessageType, r io.Reader) (done bool) {
	defer s.leaveReadSlot()
	limit, name := MaxMessageBytes, limits.WSMessageBytes
	if s.authenticated() == nil {
		limit, name = MaxPreConnectBytes, limits.WSPreConnectBytes
	}
	// The deadline covers the whole message: for one over the limit, its
	// drain too (the reading slot is held meanwhile).
	stop := s.messageDeadline()
	data, over, hold, err := s.readFrame(r, limit)
	if over == nil {
		stop()
	}
	switch {
	case errors.Is(err, errPendingShare):
		s.h.Refusals.Refused(limits.WSPendingBytes)
		s.closeWith(websocket.StatusPolicyViolation, "this principal's sockets hold too many bytes of unfinished frames")
		return true
	case errors.Is(err, errFramesInFlight):
		s.h.Refusals.Refused(limits.WSFramesInFlight)
		s.closeWith(websocket.StatusTryAgainLater, "the engine is busy reading frames; retry later")
		return true
	case err != nil:
		return true
	}
	defer hold.release()
	if over != nil {
		var f frameSniffer
		_, _ = f.Write(data)
		hold.release() // the rest is scanned, not kept
		_, _ = f.Write(over)
		_, err := io.Copy(&f, r)
		if !stop() || err != nil {
			return true // the deadline closed the socket, or it broke
		}
		action := f.action()
		if action == "" {
			action = "error"
		}
		s.h.Refusals.Refused(name)
		msg := fmt.Sprintf("Message too large: frames are limited to %d bytes", limit)
		if name == limits.WSPreConnectBytes {
			msg = fmt.Sprintf("Message too large: frames before connect are limited to %d bytes", limit)
		}
		s.send(f.requestID(), s.fail(action, domain.LimitExceeded(domain.KindTooLarge, string(name), "%s", msg)))
		return false
	}
	if typ != websocket.MessageText && typ != websocket.MessageBinary {
		return false
	}
	return s.handle(data)
}

// authenticated returns the connection's principal, nil before connect.
func (s *session) authenticated() *domain.Principal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.principal
}

// addThread records a thread started (or joined) here and the role this
// connection acts as on it; the session follows it (copies of its
// notifications, app/delivery/follow.go). Joined threads also make the
// session eligible for their notifications (owned ones already are).
func (s *session) addThread(id, role string, joined bool) {
	s.parties.Add(id, role)
	s.hub.Follow(id)
	if joined {
		s.hub.AddThread(id)
	}
}
