package wsapi

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/time/rate"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/httpapi"
	"github.com/threadengine/engine/adapters/limits"
	"github.com/threadengine/engine/domain"
)

// admission counts the sockets of one Handler against limits.ws.*: all open
// sockets, those not yet authenticated (connect), and those of each principal.
type admission struct {
	mu           sync.Mutex
	total        int
	unauth       int
	perAddress   map[string]int // unauthenticated sockets by client address
	perPrincipal map[string]*principalShare
	swept        time.Time // the last sweep of idle shares (shareSweepEvery)
}

// shareSweepEvery is how often promote drops the shares of principals
// without sockets whose rates have refilled and whose budgets are empty: a
// share kept after its principal's last socket closed is what makes a
// principal that reconnects find its rates where it left them (a spent
// rate does not start over with a new socket), and one that is idle again
// is the same as a new one, so the map holds the principals connected or
// active within one interval plus the time their rates take to refill.
const shareSweepEvery = time.Minute

// principalShare is what the sockets of one principal share on this
// replica: their count, their frame rate, the bytes queued for them and the
// bytes of their frames being received or handled.
type principalShare struct {
	sockets int
	frames  *rate.Limiter
	bytes   *rate.Limiter
	queued  *byteBudget
	pending *byteBudget
	reading chan struct{} // a slot per socket being read (limits.ws.max_reading_per_principal)
}

// wsLimit is the configured value, or the default where unset (a Handler
// built with only some limits).
func wsLimit[T int | int64 | float64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

func (h *Handler) newShare() *principalShare {
	lim, def := h.limits(), config.DefaultLimits().WS
	return &principalShare{
		frames: rate.NewLimiter(rate.Limit(wsLimit(lim.FramesPerSecond, def.FramesPerSecond)), wsLimit(lim.FrameBurst, def.FrameBurst)),
		bytes:  rate.NewLimiter(rate.Limit(wsLimit(lim.BytesPerSecond, def.BytesPerSecond)), wsLimit(lim.ByteBurst, def.ByteBurst)),
		queued: newByteBudget(limits.WSQueuedBytes, h.Refusals, wsLimit(lim.MaxQueuedBytesPerPrincipal, def.MaxQueuedBytesPerPrincipal)),
		pending: newByteBudget(limits.WSPendingBytesBudget, h.Refusals,
			wsLimit(lim.MaxPendingBytesPerPrincipal, def.MaxPendingBytesPerPrincipal)),
		reading: make(chan struct{}, wsLimit(lim.MaxReadingPerPrincipal, def.MaxReadingPerPrincipal)),
	}
}

// messageReadTimeout bounds reading one message once its reading slot is
// taken, a message over the frame limit included (it is drained to its end
// to answer it, up to hardReadLimit): a fragmented message that never
// finishes, or an oversized one trickled in, would otherwise hold its slot
// and its bytes for as long as the socket lives.
const messageReadTimeout = 15 * time.Second

// messageDeadline closes the socket (1008, counted) if the message being
// read is not complete within messageReadTimeout; stop cancels it.
func (s *session) messageDeadline() (stop func() bool) {
	d := messageReadTimeout
	expire := func() {
		s.h.Refusals.Refused(limits.WSMessageTimeout)
		s.closeWith(websocket.StatusPolicyViolation, "a message must arrive within "+d.String())
	}
	if s.h.afterMessageTimeout != nil {
		return s.h.afterMessageTimeout(d, expire)
	}
	return time.AfterFunc(d, expire).Stop
}

// takeReadSlot waits for one of the principal's reading slots (none before
// connect); false when the session ended first.
func (s *session) takeReadSlot() bool {
	sh := s.share.Load()
	if sh == nil {
		return true
	}
	select {
	case sh.reading <- struct{}{}:
		s.readSlot = sh.reading
		return true
	case <-s.ctx.Done():
		return false
	}
}

// leaveReadSlot gives the slot back (once the frame is read and decoded,
// or on any way out of the read loop).
func (s *session) leaveReadSlot() {
	if s.readSlot != nil {
		<-s.readSlot
		s.readSlot = nil
	}
}

// ratePause is how long a socket is left unread after a rate_limited
// refusal, and the least retryAfterMs such a refusal gives: the exact wait
// for the next token is milliseconds, and a hundred sockets reading (and
// refusing) a frame every few milliseconds is the flood itself.
const ratePause = time.Second

// paced waits out the pause a rate_limited refusal set: the client was told
// to retry after it, and reading (and refusing) what it sends meanwhile
// would spend the engine's CPU on the flood. False when the session ended.
func (s *session) paced() bool {
	if s.pause <= 0 {
		return true
	}
	t := time.NewTimer(s.pause)
	defer t.Stop()
	s.pause = 0
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// checkRate takes one frame of size bytes from the principal's rates; over
// either, the frame is refused rate_limited with the wait before it would
// pass (nothing is taken).
func (s *session) checkRate(size int) error {
	sh := s.share.Load()
	if sh == nil {
		return nil
	}
	now := time.Now()
	rf := sh.frames.ReserveN(now, 1)
	rb := sh.bytes.ReserveN(now, size)
	d := max(rf.DelayFrom(now), rb.DelayFrom(now))
	if rf.OK() && rb.OK() && d == 0 {
		return nil
	}
	rf.CancelAt(now)
	rb.CancelAt(now)
	s.h.Refusals.Refused(limits.WSFrameRate)
	d = max(d, ratePause)
	s.pause = ratePause
	return domain.E(domain.KindRateLimited, domain.CodeRateLimited,
		"this principal sends more than %g frames or %g bytes a second, its limit; retry after retryAfterMs",
		float64(sh.frames.Limit()), float64(sh.bytes.Limit())).WithDetail("limit", string(limits.WSFrameRate)).
		WithRetryAfter(d)
}

func (h *Handler) limits() config.WSLimits {
	if h.Limits.MaxSockets <= 0 {
		return config.DefaultLimits().WS
	}
	return h.Limits
}

func limitErr(kind domain.Kind, name limits.Name, msg string, args ...any) *domain.Error {
	return domain.LimitExceeded(kind, string(name), msg, args...)
}

// admit reserves an unauthenticated socket for client address addr before
// the upgrade.
func (h *Handler) admit(addr string) error {
	lim := h.limits()
	perAddr := lim.MaxUnauthenticatedPerAddress
	if perAddr <= 0 {
		perAddr = config.DefaultLimits().WS.MaxUnauthenticatedPerAddress
	}
	a := &h.admission
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.total >= lim.MaxSockets {
		return limitErr(domain.KindRateLimited, limits.WSSockets, "the engine has %d open WebSockets, its limit; retry later", lim.MaxSockets)
	}
	if a.unauth >= lim.MaxUnauthenticated {
		return limitErr(domain.KindRateLimited, limits.WSUnauthenticated,
			"%d WebSockets are waiting to authenticate, the limit; retry later", lim.MaxUnauthenticated)
	}
	if a.perAddress[addr] >= perAddr {
		return limitErr(domain.KindRateLimited, limits.WSUnauthPerAddress,
			"%d WebSockets from this address are waiting to authenticate, the limit; send connect on them first", perAddr)
	}
	if a.perAddress == nil {
		a.perAddress = map[string]int{}
	}
	a.total++
	a.unauth++
	a.perAddress[addr]++
	return nil
}

// leaveUnauthenticated drops an unauthenticated socket of addr from the
// counts (a.mu held).
func (a *admission) leaveUnauthenticated(addr string) {
	a.unauth--
	if a.perAddress[addr]--; a.perAddress[addr] <= 0 {
		delete(a.perAddress, addr)
	}
}

// refuseUpgrade answers a socket over a limit with a coded 429 instead of
// upgrading it.
func (h *Handler) refuseUpgrade(w http.ResponseWriter, err *domain.Error) {
	h.Refusals.Refused(limits.Name(err.Details["limit"].(string)))
	status, body := httpapi.Problem(err)
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Connection", "close")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// closeOnRefusal makes every answer but the upgrade itself (a refusal by a
// limit, a malformed handshake) close the HTTP connection: the refused
// client opens a new one to retry anyway, and a kept-alive refused
// connection held a file descriptor for the idle timeout (2,980 of 3,000
// refused sockets were still open 15 s later).
type closeOnRefusal struct{ http.ResponseWriter }

func (w closeOnRefusal) WriteHeader(code int) {
	if code != http.StatusSwitchingProtocols {
		w.Header().Set("Connection", "close")
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets the WebSocket library find the connection to hijack.
func (w closeOnRefusal) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// promote moves a socket from unauthenticated to principal p's sockets.
func (h *Handler) promote(s *session, p domain.Principal) error {
	lim := h.limits()
	a := &h.admission
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweep(time.Now())
	key := p.Key()
	sh := a.perPrincipal[key]
	if sh != nil && sh.sockets >= lim.MaxPerPrincipal {
		return limitErr(domain.KindRateLimited, limits.WSPerPrincipal,
			"this principal has %d open WebSockets, the limit; close one first", lim.MaxPerPrincipal)
	}
	if a.perPrincipal == nil {
		a.perPrincipal = map[string]*principalShare{}
	}
	if sh == nil {
		sh = h.newShare()
		a.perPrincipal[key] = sh
	}
	sh.sockets++
	a.leaveUnauthenticated(s.addr)
	s.admitted = key
	s.share.Store(sh)
	// Authenticated: frames up to MaxMessageBytes (and drained up to
	// hardReadLimit) from now on.
	s.conn.SetReadLimit(hardReadLimit)
	return nil
}

// release frees the socket's place when it ends.
func (h *Handler) release(s *session) {
	a := &h.admission
	a.mu.Lock()
	defer a.mu.Unlock()
	a.total--
	if s.admitted == "" {
		a.leaveUnauthenticated(s.addr)
		return
	}
	// The share outlives the principal's last socket until it is idle
	// (sweep): reconnecting does not refill its rates.
	if sh := a.perPrincipal[s.admitted]; sh != nil {
		sh.sockets--
	}
}

// sweep drops the idle shares (a.mu held), at most once per
// shareSweepEvery.
func (a *admission) sweep(now time.Time) {
	if now.Sub(a.swept) < shareSweepEvery {
		return
	}
	a.swept = now
	for key, sh := range a.perPrincipal {
		if sh.idle(now) {
			delete(a.perPrincipal, key)
		}
	}
}

// idle: no socket, both rates full again, nothing queued or pending and
// no frame being read, so a new share would be the same.
func (sh *principalShare) idle(now time.Time) bool {
	return sh.sockets <= 0 && len(sh.reading) == 0 &&
		sh.frames.TokensAt(now) >= float64(sh.frames.Burst()) && sh.bytes.TokensAt(now) >= float64(sh.bytes.Burst()) &&
		sh.queued.held() == 0 && sh.pending.held() == 0
}

// connectDeadline closes the socket if it has not authenticated in time.
func (s *session) connectDeadline() (stop func() bool) {
	d := s.h.limits().ConnectTimeout
	return time.AfterFunc(d, func() {
		if s.authenticated() == nil && s.ctx.Err() == nil {
			s.h.Refusals.Refused(limits.WSConnectTimeout)
			s.closeWith(websocket.StatusPolicyViolation, "send connect (with an API key) within "+d.String())
		}
	}).Stop
}

// checkSubscription enforces the subscription limits of one socket.
func (s *session) checkSubscription(name string) error {
	lim := s.h.limits()
	if len(name) > lim.MaxSubscriptionKeyBytes {
		s.h.Refusals.Refused(limits.WSSubscriptionKeyBytes)
		return limitErr(domain.KindTooLarge, limits.WSSubscriptionKeyBytes,
			"subscription keys are limited to %d bytes", lim.MaxSubscriptionKeyBytes)
	}
	if !s.subs[name] && len(s.subs) >= lim.MaxSubscriptions {
		s.h.Refusals.Refused(limits.WSSubscriptions)
		return limitErr(domain.KindTooLarge, limits.WSSubscriptions,
			"a connection may hold %d subscriptions; unsubscribe first", lim.MaxSubscriptions)
	}
	return nil
}
