package wsapi

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

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
	perPrincipal map[string]int
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
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func principalKey(p domain.Principal) string { return string(p.Kind) + ":" + p.ID }

// promote moves a socket from unauthenticated to principal p's sockets.
func (h *Handler) promote(s *session, p domain.Principal) error {
	lim := h.limits()
	a := &h.admission
	a.mu.Lock()
	defer a.mu.Unlock()
	key := principalKey(p)
	if a.perPrincipal[key] >= lim.MaxPerPrincipal {
		return limitErr(domain.KindRateLimited, limits.WSPerPrincipal,
			"this principal has %d open WebSockets, the limit; close one first", lim.MaxPerPrincipal)
	}
	if a.perPrincipal == nil {
		a.perPrincipal = map[string]int{}
	}
	a.perPrincipal[key]++
	a.leaveUnauthenticated(s.addr)
	s.admitted = key
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
	if a.perPrincipal[s.admitted]--; a.perPrincipal[s.admitted] <= 0 {
		delete(a.perPrincipal, s.admitted)
	}
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
