package httpapi

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/domain"
)

// failureLimiter blocks a client address after too many failed sign-in
// attempts in a fixed window. Only failures count, so many people behind
// one proxy address can still sign in; the address is the TCP peer, because
// X-Forwarded-For is whatever the client says it is.
type failureLimiter struct {
	limit  int
	window time.Duration

	mu sync.Mutex
	m  map[string]*failureWindow
}

type failureWindow struct {
	start time.Time
	count int
}

func newFailureLimiter(limit int, window time.Duration) *failureLimiter {
	return &failureLimiter{limit: limit, window: window, m: map[string]*failureWindow{}}
}

func peerIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// retryAfter reports how long ip is still blocked (0 when it is not).
func (l *failureLimiter) retryAfter(ip string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.m[ip]
	if w == nil || now.Sub(w.start) >= l.window || w.count < l.limit {
		return 0
	}
	return l.window - now.Sub(w.start)
}

// fail records a failed attempt by ip.
func (l *failureLimiter) fail(ip string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.m) > 10000 {
		for k, w := range l.m {
			if now.Sub(w.start) >= l.window {
				delete(l.m, k)
			}
		}
	}
	w := l.m[ip]
	if w == nil || now.Sub(w.start) >= l.window {
		w = &failureWindow{start: now}
		l.m[ip] = w
	}
	w.count++
}

// rejectIfLimited writes 429 with Retry-After when the client is blocked.
func (l *failureLimiter) rejectIfLimited(c echo.Context) (bool, error) {
	wait := l.retryAfter(peerIP(c.Request()), time.Now())
	if wait <= 0 {
		return false, nil
	}
	c.Response().Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
	return true, WriteProblem(c, domain.E(domain.KindRateLimited, domain.CodeRateLimited,
		"too many failed sign-in attempts from this address; try again later"))
}
