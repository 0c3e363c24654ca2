package httpapi

import (
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/adapters/limits"
	"github.com/threadengine/engine/domain"
)

// failureLimiter counts failed credential exchanges per bucket — the client
// address (c.RealIP: X-Forwarded-For only from a trusted proxy) with the
// presented key's prefix — in a fixed window. It never refuses a valid
// credential: the exchange is checked first, and only a failure in a bucket
// over the limit is answered 429 instead of 401. So one client guessing (or
// repeating a revoked key) neither locks out other keys from its address nor
// anyone behind the same proxy.
type failureLimiter struct {
	limit    int
	window   time.Duration
	refusals *limits.Counter

	mu sync.Mutex
	m  map[string]*failureWindow
}

type failureWindow struct {
	start time.Time
	count int
}

// maxFailureBuckets bounds the limiter's memory: when every bucket is live
// and the map is full, it starts over (an attacker then only loses its own
// blocks).
const maxFailureBuckets = 10000

func newFailureLimiter(limit int, window time.Duration) *failureLimiter {
	return &failureLimiter{limit: limit, window: window, m: map[string]*failureWindow{}}
}

// bucket is the throttle key of a failed attempt: the address and the API
// key's display prefix ("td_" and a few random characters, which tell keys
// apart without keeping any secret part). License-key attempts (apiKey
// empty) share one bucket per address: a license key may have little
// entropy, and a valid one passes anyway.
func bucket(ip, apiKey string) string {
	if apiKey == "" {
		return ip + " license"
	}
	return ip + " " + domain.DisplayPrefix(apiKey)
}

// fail records a failed attempt in bucket b and reports how long b is now
// blocked (0 while it is within the limit).
func (l *failureLimiter) fail(b string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.m[b]
	if w == nil || now.Sub(w.start) >= l.window {
		if len(l.m) >= maxFailureBuckets {
			for k, w := range l.m {
				if now.Sub(w.start) >= l.window {
					delete(l.m, k)
				}
			}
			if len(l.m) >= maxFailureBuckets {
				l.m = map[string]*failureWindow{}
			}
		}
		w = &failureWindow{start: now}
		l.m[b] = w
	}
	w.count++
	if w.count <= l.limit {
		return 0
	}
	return l.window - now.Sub(w.start)
}

// refuse answers a failed attempt in a blocked bucket: 429 with Retry-After.
func (l *failureLimiter) refuse(c echo.Context, wait time.Duration) error {
	l.refusals.Refused(limits.SignInFailures)
	c.Response().Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
	return domain.E(domain.KindRateLimited, domain.CodeRateLimited,
		"too many failed sign-in attempts with this key from this address; try again later").
		WithDetail("limit", string(limits.SignInFailures))
}
