// Package budget keeps per-principal token buckets: what one user or
// service account may spend of a shared resource over time (the OTLP byte
// rate, the read gate's run time), charged after the fact and paid back at
// a rate.
package budget

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Buckets are token buckets kept per principal (user or service account
// id), all with the same rate and burst. A principal that spends more than
// it has goes into debt (Charge) and is refused (Debt) until the debt is
// paid back at the rate: what a request costs is often known only once it
// has been read, so it is charged after it was admitted and the next
// request waits for it.
//
// A bucket back at its burst is the same as a new one, so the buckets of
// idle principals are forgotten (at most once per SweepEvery, on use): the
// map holds only principals that spent within the time their bucket takes
// to refill, plus one interval.
type Buckets struct {
	perSecond float64
	burst     int

	mu    sync.Mutex
	of    map[string]*rate.Limiter
	swept time.Time
}

// SweepEvery is how often idle buckets are dropped.
const SweepEvery = time.Minute

// NewBuckets returns per-principal buckets refilled at perSecond, holding
// at most burst; nil (no limit) unless both are positive.
func NewBuckets(perSecond float64, burst int) *Buckets {
	if perSecond <= 0 || burst <= 0 {
		return nil
	}
	return &Buckets{perSecond: perSecond, burst: burst, of: map[string]*rate.Limiter{}}
}

// Debt is how long who must wait before its bucket holds a token again:
// zero when it may go on (always, for nil Buckets: nothing is limited).
func (b *Buckets) Debt(who string, now time.Time) time.Duration {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sweep(now)
	l := b.of[who]
	if l == nil {
		return 0
	}
	if tokens := l.TokensAt(now); tokens < 1 {
		return time.Duration((1 - tokens) / b.perSecond * float64(time.Second))
	}
	return 0
}

// Take takes n tokens (at most the burst) from who's bucket when it holds
// them, and returns zero; else it takes nothing and returns how long who
// must wait until it would hold them.
func (b *Buckets) Take(who string, n int, now time.Time) time.Duration {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.bucket(who, now).ReserveN(now, min(max(n, 1), b.burst))
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d
	}
	return 0
}

// Charge takes n tokens from who's bucket, into debt if it has fewer (n
// is capped at the burst: no single charge makes a debt longer than the
// time to refill a full bucket).
func (b *Buckets) Charge(who string, n int, now time.Time) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bucket(who, now).ReserveN(now, min(n, b.burst))
}

// bucket is who's bucket, made if it has none (b.mu held): a bucket the
// sweep dropped was full, so a new one is the same. The lookup and the use
// happen under one lock, so a sweep never drops a bucket in between (what
// it took would be lost).
func (b *Buckets) bucket(who string, now time.Time) *rate.Limiter {
	b.sweep(now)
	l := b.of[who]
	if l == nil {
		l = rate.NewLimiter(rate.Limit(b.perSecond), b.burst)
		b.of[who] = l
	}
	return l
}

// Len is how many principals have a bucket now.
func (b *Buckets) Len() int {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.of)
}

// sweep drops the buckets that are full again (b.mu held).
func (b *Buckets) sweep(now time.Time) {
	if now.Sub(b.swept) < SweepEvery {
		return
	}
	b.swept = now
	for who, l := range b.of {
		if l.TokensAt(now) >= float64(l.Burst()) {
			delete(b.of, who)
		}
	}
}
